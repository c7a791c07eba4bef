/**
 * A SPDY/3.1 client for frame-level tests: it sends the upgrade request kube-apiserver sends
 * (`Connection: Upgrade`, `Upgrade: SPDY/3.1`, `X-Stream-Protocol-Version`) and then reads and
 * writes raw frames with the project's framer.
 * @module
 */
import {
  ByteReader,
  type Frame,
  Framer,
  type SpdyHeaders,
} from "../../src/cri_streaming/spdy/frame.ts";

/** The answer to the upgrade request. */
export interface UpgradeAnswer {
  status: number;
  headers: Map<string, string[]>;
  body: string;
}

/** One client connection. */
export class TestSpdyClient {
  readonly conn: Deno.TcpConn;
  readonly framer = new Framer();
  readonly reader: ByteReader;
  #nextStreamId = 1;

  private constructor(conn: Deno.TcpConn, reader: ByteReader) {
    this.conn = conn;
    this.reader = reader;
  }

  /**
   * Sends the upgrade request for `url`; with a 101 the connection is ready for frames, otherwise
   * the answer's body is read to its end and the connection closed.
   */
  static async dial(
    url: string,
    options: { protocols?: string[]; headers?: [string, string][]; method?: string } = {},
  ): Promise<{ answer: UpgradeAnswer; client?: TestSpdyClient }> {
    const u = new URL(url);
    const conn = await Deno.connect({ hostname: u.hostname, port: Number(u.port) });
    const lines = [
      `${options.method ?? "POST"} ${u.pathname} HTTP/1.1`,
      `Host: ${u.host}`,
      ...(options.headers ??
        [["Connection", "Upgrade"], ["Upgrade", "SPDY/3.1"]]).map(([k, v]) => `${k}: ${v}`),
      ...(options.protocols ?? ["v4.channel.k8s.io"]).map((p) => `X-Stream-Protocol-Version: ${p}`),
    ];
    await conn.write(new TextEncoder().encode(lines.join("\r\n") + "\r\n\r\n"));
    // Read the answer's head byte by byte: what follows belongs to SPDY.
    const bytes: number[] = [];
    const one = new Uint8Array(1);
    while (!(bytes.length >= 4 && bytes.slice(-4).join() === "13,10,13,10")) {
      if (await conn.read(one) === null) throw new Error("connection closed in the answer");
      bytes.push(one[0]);
    }
    const [statusLine, ...rest] = new TextDecoder().decode(new Uint8Array(bytes)).trim().split(
      "\r\n",
    );
    const headers = new Map<string, string[]>();
    for (const line of rest) {
      const i = line.indexOf(":");
      const k = line.slice(0, i).toLowerCase();
      headers.set(k, [...(headers.get(k) ?? []), line.slice(i + 1).trim()]);
    }
    const status = Number(statusLine.split(" ")[1]);
    if (status !== 101) {
      const chunks: Uint8Array[] = [];
      const buf = new Uint8Array(4096);
      for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) {
        chunks.push(buf.slice(0, n));
      }
      conn.close();
      const body = chunks.map((c) => new TextDecoder().decode(c)).join("");
      return { answer: { status, headers, body } };
    }
    const client = new TestSpdyClient(conn, new ByteReader((b) => conn.read(b)));
    return { answer: { status, headers, body: "" }, client };
  }

  /** Sends `frame`. */
  async send(frame: Frame): Promise<void> {
    const bytes = await this.framer.encode(frame);
    for (let off = 0; off < bytes.length;) off += await this.conn.write(bytes.subarray(off));
  }

  /** Opens a stream with `headers`; returns its id. */
  async open(headers: SpdyHeaders, flags = 0): Promise<number> {
    const streamId = this.#nextStreamId;
    this.#nextStreamId += 2;
    await this.send({
      type: "synStream",
      streamId,
      associatedToStreamId: 0,
      priority: 0,
      flags,
      headers,
    });
    return streamId;
  }

  /** The next frame, or null when the server closed the connection. */
  async next(): Promise<Frame | null> {
    try {
      return await this.framer.readFrame(this.reader);
    } catch {
      return null;
    }
  }

  /** Frames until the connection ends (or `stop` says so). */
  async collect(stop: (f: Frame) => boolean = () => false): Promise<Frame[]> {
    const frames: Frame[] = [];
    for (let f = await this.next(); f !== null; f = await this.next()) {
      frames.push(f);
      if (stop(f)) break;
    }
    return frames;
  }

  /** Closes the connection. */
  close(): void {
    try {
      this.conn.close();
    } catch {
      // closed already
    }
    this.framer.close();
  }
}

/** The data a stream carried in `frames`, as text. */
export function streamText(frames: Frame[], streamId: number): string {
  return frames.filter((f) => f.type === "data" && f.streamId === streamId)
    .map((f) => new TextDecoder().decode((f as { data: Uint8Array }).data)).join("");
}
