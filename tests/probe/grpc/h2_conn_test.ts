/**
 * The gRPC probe's own HTTP/2 client (src/probe/grpc/h2_conn.ts) against a scripted server on
 * 127.0.0.1 that writes frames by hand: the parts a grpc-js server does not exercise (PING,
 * SETTINGS mid-call, CONTINUATION, padding, RST_STREAM, GOAWAY, an early close).
 */
import assert from "node:assert/strict";
import hpack from "hpack.js";
import { newGrpcProber } from "../../../src/probe/grpc/mod.ts";

interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Uint8Array;
}

/** The server side of one connection, driven by a test script. */
class Peer {
  #buf = new Uint8Array(0);
  #compressor = hpack.compressor.create({ table: { maxSize: 4096 } });
  #decompressor = hpack.decompressor.create({ table: { maxSize: 4096 } });

  constructor(readonly conn: Deno.Conn) {}

  async readExactly(n: number): Promise<Uint8Array> {
    const chunk = new Uint8Array(4096);
    while (this.#buf.length < n) {
      const read = await this.conn.read(chunk);
      if (read === null) throw new Error("client closed");
      const joined = new Uint8Array(this.#buf.length + read);
      joined.set(this.#buf);
      joined.set(chunk.subarray(0, read), this.#buf.length);
      this.#buf = joined;
    }
    const out = this.#buf.slice(0, n);
    this.#buf = this.#buf.subarray(n);
    return out;
  }

  async readFrame(): Promise<Frame> {
    const head = await this.readExactly(9);
    const length = (head[0] << 16) | (head[1] << 8) | head[2];
    const view = new DataView(head.buffer);
    return {
      type: head[3],
      flags: head[4],
      streamId: view.getUint32(5) & 0x7fffffff,
      payload: await this.readExactly(length),
    };
  }

  async send(...frames: Uint8Array[]): Promise<void> {
    for (const f of frames) await this.conn.write(f);
  }

  /** HPACK with Huffman and the dynamic table, as real servers send. */
  encode(fields: [string, string][]): Uint8Array {
    this.#compressor.write(fields.map(([name, value]) => ({ name, value })));
    const parts: Uint8Array[] = [];
    for (let p = this.#compressor.read(); p !== null; p = this.#compressor.read()) parts.push(p);
    return concat(parts);
  }

  decode(block: Uint8Array): Map<string, string> {
    this.#decompressor.write(block);
    this.#decompressor.execute();
    const out = new Map<string, string>();
    for (let f = this.#decompressor.read(); f !== null; f = this.#decompressor.read()) {
      out.set(f.name, f.value);
    }
    return out;
  }

  /** Reads the preface and frames until the request's END_STREAM; returns what it saw. */
  async readRequest(): Promise<{ headers: Map<string, string>; body: Uint8Array; seen: Frame[] }> {
    const preface = new TextDecoder().decode(await this.readExactly(24));
    assert.equal(preface, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    const seen: Frame[] = [];
    let block: Uint8Array = new Uint8Array(0);
    const body: Uint8Array[] = [];
    for (;;) {
      const f = await this.readFrame();
      seen.push(f);
      if (f.type === 0x1 || f.type === 0x9) block = concat([block, f.payload]);
      if (f.type === 0x0) body.push(f.payload);
      if (f.type === 0x0 && (f.flags & 0x1)) break;
      // The first frame of ours comes after the client's SETTINGS.
      if (seen.length === 1) await this.send(frame(0x4, 0, 0, new Uint8Array(0)));
    }
    return { headers: this.decode(block), body: concat(body), seen };
  }
}

function frame(type: number, flags: number, streamId: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(9 + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, payload.length << 8);
  out[3] = type;
  out[4] = flags;
  view.setUint32(5, streamId);
  out.set(payload, 9);
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** Runs `script` for the first connection of a listener on 127.0.0.1 while the probe runs. */
async function probeAgainst(
  script: (peer: Peer) => Promise<void>,
  options: { service?: string } = {},
): Promise<{ output: string; result: string }> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const served = (async () => {
    const conn = await listener.accept();
    try {
      await script(new Peer(conn));
    } finally {
      // Waits for the probe to close its end, then releases ours.
      await conn.readable.pipeTo(new WritableStream()).catch(() => {});
    }
  })();
  try {
    const outcome = await newGrpcProber().probe("127.0.0.1", {
      service: options.service ?? "",
      port,
      timeoutMs: 2000,
    });
    await served;
    return { output: outcome.output, result: outcome.result };
  } finally {
    listener.close();
  }
}

const grpcMessage = (proto: number[]) => Uint8Array.from([0, 0, 0, 0, proto.length, ...proto]);

Deno.test("H2Conn: request frames, PING and SETTINGS answered, CONTINUATION and padding read", async () => {
  let request: Awaited<ReturnType<Peer["readRequest"]>> | undefined;
  const pingPayload = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
  const outcome = await probeAgainst(async (peer) => {
    request = await peer.readRequest();
    // A PING and new SETTINGS mid-call must be answered before the response is read.
    await peer.send(
      frame(0x6, 0, 0, pingPayload),
      frame(0x4, 0, 0, Uint8Array.from([0, 5, 0, 0, 0x80, 0])),
    );
    const answers: Frame[] = [];
    while (answers.length < 2) {
      const f = await peer.readFrame();
      if ((f.type === 0x6 || f.type === 0x4) && f.flags & 0x1) answers.push(f);
    }
    assert.deepEqual(
      answers.map((f) => f.type).sort(),
      [0x4, 0x6],
    );
    assert.deepEqual(answers.find((f) => f.type === 0x6)?.payload, pingPayload);
    // Response headers split over HEADERS + CONTINUATION, a padded DATA, then trailers.
    const block = peer.encode([[":status", "200"], ["content-type", "application/grpc"]]);
    await peer.send(
      frame(0x1, 0, 1, block.subarray(0, 3)),
      frame(0x9, 0x4, 1, block.subarray(3)),
      frame(
        0x0,
        0x8,
        1,
        concat([Uint8Array.from([3]), grpcMessage([0x08, 0x01]), new Uint8Array(3)]),
      ),
      frame(0x1, 0x5, 1, peer.encode([["grpc-status", "0"], ["grpc-message", ""]])),
    );
  }, { service: "svc" });
  assert.deepEqual(outcome, { result: "success", output: "service healthy" });
  assert.ok(request);
  // Client SETTINGS first: push disabled.
  const settings = request.seen[0];
  assert.equal(settings.type, 0x4);
  const ids = [];
  for (let off = 0; off < settings.payload.length; off += 6) {
    ids.push([(settings.payload[off] << 8) | settings.payload[off + 1], settings.payload[off + 5]]);
  }
  assert.ok(ids.some(([id, value]) => id === 2 && value === 0), "ENABLE_PUSH 0");
  // Our SETTINGS was acknowledged.
  assert.ok(request.seen.some((f) => f.type === 0x4 && f.flags & 0x1));
  assert.equal(request.headers.get(":method"), "POST");
  assert.equal(request.headers.get(":path"), "/grpc.health.v1.Health/Check");
  assert.equal(request.headers.get(":scheme"), "http");
  assert.equal(request.headers.get("content-type"), "application/grpc");
  assert.equal(request.headers.get("te"), "trailers");
  assert.equal(request.headers.get("grpc-timeout"), "2000000u");
  assert.match(request.headers.get("user-agent") ?? "", /^kube-probe\/1\.36 probelet-grpc$/);
  // Length-prefixed HealthCheckRequest{service: "svc"}.
  assert.deepEqual([...request.body], [0, 0, 0, 0, 5, 0x0a, 3, 0x73, 0x76, 0x63]);
});

Deno.test("H2Conn: an enum value without a name prints as its number", async () => {
  const outcome = await probeAgainst(async (peer) => {
    await peer.readRequest();
    await peer.send(
      frame(0x1, 0x4, 1, peer.encode([[":status", "200"], ["content-type", "application/grpc"]])),
      frame(0x0, 0, 1, grpcMessage([0x08, 0x07, 0x10, 0x01])),
      frame(0x1, 0x5, 1, peer.encode([["grpc-status", "0"]])),
    );
  });
  assert.deepEqual(outcome, {
    result: "failure",
    output: 'service unhealthy (responded with "7")',
  });
});

Deno.test("H2Conn: RST_STREAM maps to grpc-go's code and text", async () => {
  const outcome = await probeAgainst(async (peer) => {
    await peer.readRequest();
    await peer.send(frame(0x3, 0, 1, Uint8Array.from([0, 0, 0, 7])));
  });
  assert.deepEqual(outcome, {
    result: "failure",
    output: "error: health rpc probe failed: rpc error: code = Unavailable desc = " +
      "stream terminated by RST_STREAM with error code: REFUSED_STREAM",
  });
});

Deno.test("H2Conn: GOAWAY that does not cover the stream is Unavailable", async () => {
  const outcome = await probeAgainst(async (peer) => {
    await peer.readRequest();
    await peer.send(frame(0x7, 0, 0, new Uint8Array(8)));
  });
  assert.deepEqual(outcome, {
    result: "failure",
    output: "error: health rpc probe failed: rpc error: code = Unavailable desc = " +
      "the stream is rejected because server is draining the connection",
  });
});

Deno.test("H2Conn: GOAWAY covering the stream lets the call finish", async () => {
  const outcome = await probeAgainst(async (peer) => {
    await peer.readRequest();
    await peer.send(
      frame(0x7, 0, 0, Uint8Array.from([0, 0, 0, 1, 0, 0, 0, 0])),
      frame(
        0x1,
        0x5,
        1,
        peer.encode([[":status", "200"], ["content-type", "application/grpc"], [
          "grpc-status",
          "12",
        ]]),
      ),
    );
  });
  assert.equal(outcome.result, "failure");
  assert.equal(
    outcome.output,
    "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ",
  );
});

Deno.test("H2Conn: the server closing mid-call is EOF", async () => {
  const outcome = await probeAgainst(async (peer) => {
    await peer.readRequest();
    await peer.send(
      frame(0x1, 0x4, 1, peer.encode([[":status", "200"], ["content-type", "application/grpc"]])),
    );
    peer.conn.close();
  });
  assert.deepEqual(outcome, {
    result: "failure",
    output: "error: health rpc probe failed: rpc error: code = Unavailable desc = " +
      "error reading from server: EOF",
  });
});
