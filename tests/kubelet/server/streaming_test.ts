/**
 * The secure port's `/exec`, `/attach`, `/portForward` and `/run` on a real TLS socket
 * (127.0.0.1, port 0), against a fake streaming host and a fake streaming server on 127.0.0.1:
 * kubelet's paths, query parameters, status codes and texts; the upgrade request forwarded to the
 * runtime's URL with its header lines as they came; the 101 and the bytes relayed both ways; the
 * streaming server's refusal relayed; authorization with subresource `proxy`; and the stream's
 * deadlines on the fake clock (the plain-request ones do not cut it, kubelet's 4 h does).
 * Ports kubelet's server_test.go: TestServeExecInContainer, TestServeAttachContainer,
 * TestServePortForward, TestServeRunInContainer, TestServeRunInContainerWithUID, and
 * TestServeExecInContainerIdleTimeout's point (a stream outlives the plain timeouts).
 * @module
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import type { Pod } from "../../../src/api/core/v1/mod.ts";
import type { Attributes } from "../../../src/kubelet/server/auth.ts";
import {
  newDelegatingAuthenticator,
  newKubeletAuth,
} from "../../../src/kubelet/server/delegating_auth.ts";
import {
  defaultIdleTimeoutMs,
  defaultReadHeaderTimeoutMs,
  defaultWriteTimeoutMs,
} from "../../../src/kubelet/server/http_server.ts";
import { type KubeletServer, serveKubeletServer } from "../../../src/kubelet/server/server.ts";
import { defaultStreamTimeoutMs } from "../../../src/kubelet/server/upgradeaware.ts";
import type { StreamingHost, StreamOptions } from "../../../src/kubelet/kubelet_streaming.ts";
import { unimplemented } from "../../../src/kubelet/kuberuntime/kuberuntime_container.ts";
import { CriError } from "../../../src/cri_client/connection.ts";
import { generateSelfSignedCertKey } from "../../../src/util/cert/cert.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import * as log from "../../../src/util/log.ts";
import { writeAll } from "../../../src/util/socket.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const testUID = "9b01b80f-8fb4-11e4-95ab-4200af06647";

/** What the fake streaming server does with a request. */
type Mode = "upgrade" | "refuse" | "ok";

/**
 * A streaming server on 127.0.0.1 standing in for containerd's: it records each request head;
 * "upgrade" answers 101 then `container data`, and echoes what it reads back upper-cased;
 * "refuse" answers 404 as an expired token is; "ok" answers a plain 200.
 */
function fakeStreamingServer() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const heads: string[] = [];
  const conns = new Set<Deno.Conn>();
  let mode: Mode = "upgrade";
  let ended = 0;
  let onEnd: (() => void) | undefined;
  const serveConn = async (conn: Deno.Conn) => {
    const buf = new Uint8Array(64 * 1024);
    let head = "";
    try {
      while (!head.includes("\r\n\r\n")) {
        const n = await conn.read(buf);
        if (n === null) return;
        head += dec.decode(buf.subarray(0, n));
      }
      heads.push(head);
      if (mode === "refuse") {
        await writeAll(
          conn,
          enc.encode(
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n" +
              "Content-Length: 18\r\n\r\n404 page not found",
          ),
        );
        return;
      }
      if (mode === "ok") {
        await writeAll(conn, enc.encode("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
        return;
      }
      await writeAll(
        conn,
        enc.encode(
          "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n" +
            "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\ncontainer data",
        ),
      );
      for (;;) {
        const n = await conn.read(buf);
        if (n === null) return;
        const text = dec.decode(buf.subarray(0, n));
        // "quit" ends the stream from this side, as a command that exits.
        if (text === "quit") return;
        await writeAll(conn, enc.encode(text.toUpperCase()));
      }
    } catch {
      // reset by the proxy
    } finally {
      conns.delete(conn);
      try {
        conn.close();
      } catch {
        // closed
      }
      ended++;
      onEnd?.();
    }
  };
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      serveConn(conn);
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    heads,
    conns,
    setMode: (m: Mode) => mode = m,
    /** Resolves once `count` connections have ended. */
    ended: (count: number) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (ended >= count) resolve();
        };
        onEnd = check;
        check();
      }),
    async close() {
      try {
        listener.close();
      } catch {
        // closed already
      }
      for (const c of conns) c.close();
      await accepting;
    },
  };
}

interface HostCall {
  op: "exec" | "attach" | "portForward" | "run";
  podFullName: string;
  uid: string;
  containerName: string;
  cmd?: string[];
  streamOpts?: StreamOptions;
  ports?: number[];
}

// A streaming host knowing pod other/foo (UID testUID): each call is recorded and answered with
// a URL on the fake streaming server, or with `fail` when set.
function fakeHost(streamingPort: number) {
  const calls: HostCall[] = [];
  const pod: Pod = {
    metadata: { name: "foo", namespace: "other", uid: testUID },
    spec: { containers: [{ name: "baz" }] },
  };
  let token = 0;
  const state: { fail?: unknown; output: string } = { output: "foo bar" };
  const url = (op: string) => {
    if (state.fail) return Promise.reject(state.fail);
    return Promise.resolve(new URL(`http://127.0.0.1:${streamingPort}/${op}/tok${++token}`));
  };
  const host: StreamingHost = {
    getPodByName: (ns, name) => (ns === "other" && name === "foo" ? pod : undefined),
    getExec: (podFullName, uid, containerName, cmd, streamOpts) => {
      calls.push({ op: "exec", podFullName, uid, containerName, cmd, streamOpts });
      return url("exec");
    },
    getAttach: (podFullName, uid, containerName, streamOpts) => {
      calls.push({ op: "attach", podFullName, uid, containerName, streamOpts });
      return url("attach");
    },
    getPortForward: (name, namespace, uid, ports) => {
      calls.push({
        op: "portForward",
        podFullName: `${name}_${namespace}`,
        uid,
        containerName: "",
        ports,
      });
      return url("portforward");
    },
    runInContainer: (podFullName, uid, containerName, cmd) => {
      calls.push({ op: "run", podFullName, uid, containerName, cmd });
      if (state.fail) return Promise.reject(state.fail);
      return Promise.resolve(enc.encode(state.output));
    },
  };
  return { host, calls, state };
}

interface Fixture {
  server: KubeletServer;
  streaming: ReturnType<typeof fakeStreamingServer>;
  calls: HostCall[];
  state: { fail?: unknown; output: string };
  authorized: Attributes[];
  clock: FakeClock;
  certPem: string;
  /** Users the authorizer refuses. */
  denied: Set<string>;
}

async function withFixture(fn: (f: Fixture) => Promise<void>): Promise<void> {
  const silence = log.setLogSink(() => {});
  const clock = new FakeClock(Date.now());
  const streaming = fakeStreamingServer();
  const { host, calls, state } = fakeHost(streaming.port);
  const serving = await generateSelfSignedCertKey("127.0.0.1");
  const authorized: Attributes[] = [];
  const denied = new Set<string>();
  const server = await serveKubeletServer({
    events: { list: () => [] },
    // deno-lint-ignore no-explicit-any
    metrics: { registry: {} as any },
    pods: () => [],
    clock,
    streaming: host,
  }, {
    hostname: "127.0.0.1",
    port: 0,
    certificate: serving,
    auth: newKubeletAuth(newDelegatingAuthenticator([], { anonymous: true }), "node-1", {
      authorize: (attrs) => {
        authorized.push(attrs);
        const decision = denied.has(attrs.user.name) ? "Deny" : "Allow";
        return Promise.resolve({ decision, reason: "" });
      },
    }),
    requestClientCert: false,
    clock,
  });
  try {
    await fn({
      server,
      streaming,
      calls,
      state,
      authorized,
      clock,
      certPem: serving.certPem,
      denied,
    });
  } finally {
    await server.shutdown();
    await streaming.close();
    log.setLogSink(silence);
  }
}

/** A client connection to the secure port, reading until what it waits for has come. */
class Client {
  received = "";
  /** Why the connection ended, when it did not end cleanly. */
  error: unknown;
  #conn: Deno.TlsConn;
  #buf = new Uint8Array(64 * 1024);
  closed = false;

  private constructor(conn: Deno.TlsConn) {
    this.#conn = conn;
  }

  static async open(f: Fixture): Promise<Client> {
    const conn = await Deno.connectTls({
      hostname: "127.0.0.1",
      port: f.server.port,
      caCerts: [f.certPem],
    });
    return new Client(conn);
  }

  send(text: string): Promise<void> {
    return writeAll(this.#conn, enc.encode(text));
  }

  /** Reads until `received` includes `text`; false when the connection ended first. */
  async readUntil(text: string): Promise<boolean> {
    while (!this.received.includes(text)) {
      if (!await this.readOnce()) return false;
    }
    return true;
  }

  /** Reads until the server closes the connection. */
  async readToEnd(): Promise<string> {
    while (await this.readOnce()) {
      // more
    }
    return this.received;
  }

  /** One read; false when the connection ended. */
  async readOnce(): Promise<boolean> {
    let n: number | null;
    try {
      n = await this.#conn.read(this.#buf);
    } catch (e) {
      this.error = e;
      n = null;
    }
    if (n === null) {
      this.closed = true;
      return false;
    }
    this.received += dec.decode(this.#buf.subarray(0, n));
    return true;
  }

  close(): void {
    try {
      this.#conn.close();
    } catch {
      // closed
    }
  }
}

// An upgrade request as kube-apiserver sends it to a kubelet: SPDY/3.1, the protocol versions
// as separate header lines.
function upgradeRequest(method: string, path: string, extra: string[] = []): string {
  return [
    `${method} ${path} HTTP/1.1`,
    "Host: 127.0.0.1:10250",
    "User-Agent: kube-apiserver/v1.36.3",
    ...(method === "POST" ? ["Content-Length: 0"] : []),
    "Connection: Upgrade",
    "Upgrade: SPDY/3.1",
    "X-Stream-Protocol-Version: v5.channel.k8s.io",
    "X-Stream-Protocol-Version: v4.channel.k8s.io",
    ...extra,
  ].join("\r\n") + "\r\n\r\n";
}

// One request on a new connection; its answer (to its content-length: an error answered by the
// handler keeps the connection open, as any plain response).
async function request(
  f: Fixture,
  raw: string,
  headers?: { head: string },
): Promise<{ status: number; body: string }> {
  const client = await Client.open(f);
  try {
    await client.send(raw);
    await client.readUntil("\r\n\r\n");
    const end = client.received.indexOf("\r\n\r\n");
    const head = client.received.slice(0, end);
    const status = Number(head.match(/^HTTP\/1\.1 (\d{3})/)?.[1] ?? 0);
    const length = Number(head.match(/\r\ncontent-length: (\d+)/i)?.[1] ?? NaN);
    while (!(client.received.length - end - 4 >= length) && await client.readOnce()) {
      // more
    }
    if (headers) headers.head = head;
    return { status, body: client.received.slice(end + 4) };
  } finally {
    client.close();
  }
}

// Opens a stream and checks the relay both ways: the 101 and "container data" come back,
// "client data" goes through and comes back upper-cased.
async function openStream(f: Fixture, raw: string): Promise<Client> {
  const client = await Client.open(f);
  await client.send(raw);
  assert(await client.readUntil("\r\n\r\n"), client.received);
  assert(client.received.startsWith("HTTP/1.1 101 Switching Protocols\r\n"), client.received);
  assert(await client.readUntil("container data"), client.received);
  await client.send("client data");
  assert(await client.readUntil("CLIENT DATA"), client.received);
  return client;
}

Deno.test("TestServeExecInContainer", async (t) => {
  await withFixture(async (f) => {
    const cases: Array<{
      name: string;
      query: string;
      uid?: boolean;
      streamOpts: StreamOptions;
    }> = [
      {
        name: "stdout",
        query: "output=1",
        streamOpts: { stdin: false, stdout: true, stderr: false, tty: false },
      },
      {
        name: "stdin",
        query: "input=1",
        streamOpts: { stdin: true, stdout: false, stderr: false, tty: false },
      },
      {
        name: "stdout and stderr",
        query: "output=1&error=1",
        streamOpts: { stdin: false, stdout: true, stderr: true, tty: false },
      },
      {
        name: "stdin, stdout, stderr",
        query: "input=1&output=1&error=1",
        streamOpts: { stdin: true, stdout: true, stderr: true, tty: false },
      },
      {
        name: "tty drops stderr",
        query: "input=1&output=1&error=1&tty=1",
        streamOpts: { stdin: true, stdout: true, stderr: false, tty: true },
      },
      {
        name: "with the pod's UID",
        query: "output=1",
        uid: true,
        streamOpts: { stdin: false, stdout: true, stderr: false, tty: false },
      },
    ];
    for (const c of cases) {
      await t.step(c.name, async () => {
        f.calls.length = 0;
        f.streaming.heads.length = 0;
        const path = `/exec/other/foo/${
          c.uid ? `${testUID}/` : ""
        }baz?command=ls&command=-a&${c.query}`;
        const client = await openStream(f, upgradeRequest("POST", path));
        client.close();
        assertEquals(f.calls, [{
          op: "exec",
          podFullName: "foo_other",
          uid: c.uid ? testUID : "",
          containerName: "baz",
          cmd: ["ls", "-a"],
          streamOpts: c.streamOpts,
        }]);
        // The streaming server got the request at its token URL, the client's query left
        // behind, its header lines as they came (repeated names apart), sorted as Go writes them.
        const head = f.streaming.heads[0].split("\r\n");
        assert(/^POST \/exec\/tok\d+ HTTP\/1\.1$/.test(head[0]), head[0]);
        assertEquals(head.slice(1, -2), [
          "Host: 127.0.0.1:10250",
          "User-Agent: kube-apiserver/v1.36.3",
          "Content-Length: 0",
          "Connection: Upgrade",
          "Upgrade: SPDY/3.1",
          "X-Forwarded-For: 127.0.0.1",
          "X-Stream-Protocol-Version: v5.channel.k8s.io",
          "X-Stream-Protocol-Version: v4.channel.k8s.io",
        ]);
      });
    }
    await t.step("the command ends: the client's TLS stream ends cleanly", async () => {
      const client = await openStream(f, upgradeRequest("POST", "/exec/other/foo/baz?output=1"));
      await client.send("quit");
      await client.readToEnd();
      client.close();
      // A close_notify, as Go's tls.Conn.Close sends: no "peer closed connection without
      // sending TLS close_notify".
      assertEquals(client.error, undefined);
    });
    await t.step("authorized as nodes/proxy, verb create for POST, get for GET", async () => {
      f.authorized.length = 0;
      (await openStream(f, upgradeRequest("POST", "/exec/other/foo/baz?command=ls&output=1")))
        .close();
      (await openStream(f, upgradeRequest("GET", "/exec/other/foo/baz?command=ls&output=1")))
        .close();
      assertEquals(
        f.authorized.map((a) => [a.verb, a.resource, a.subresource, a.name]),
        [["create", "nodes", "proxy", "node-1"], ["get", "nodes", "proxy", "node-1"]],
      );
    });
    await t.step("an ordinary user: kubelet's 403", async () => {
      f.denied.add("system:anonymous");
      try {
        f.calls.length = 0;
        const res = await request(f, upgradeRequest("POST", "/exec/other/foo/baz?output=1"));
        assertEquals(res, {
          status: 403,
          body:
            "Forbidden (user=system:anonymous, verb=create, resource=nodes, subresource(s)=[proxy])\n",
        });
        assertEquals(f.calls, []);
      } finally {
        f.denied.delete("system:anonymous");
      }
    });
    await t.step("no stream asked for: 400", async () => {
      assertEquals(await request(f, upgradeRequest("POST", "/exec/other/foo/baz?command=ls")), {
        status: 400,
        body: "you must specify at least 1 of stdin, stdout, stderr",
      });
    });
    await t.step("no such pod: 404", async () => {
      assertEquals(await request(f, upgradeRequest("POST", "/exec/other/bar/baz?output=1")), {
        status: 404,
        body: "pod does not exist",
      });
    });
    await t.step("not an upgrade: kubelet's responder 500", async () => {
      assertEquals(
        await request(
          f,
          "POST /exec/other/foo/baz?output=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        ),
        { status: 500, body: "Upgrade request required\n" },
      );
    });
    await t.step("the runtime's errors: streaming.WriteError's statuses", async () => {
      const cases: Array<[unknown, number, string]> = [
        [
          new CriError(5, "container not found", { endpoint: "e", method: "Exec" }),
          404,
          "rpc error: code = NotFound desc = container not found",
        ],
        [
          new CriError(8, "maximum number of in-flight requests exceeded", {
            endpoint: "e",
            method: "Exec",
          }),
          429,
          "rpc error: code = ResourceExhausted desc = maximum number of in-flight requests exceeded",
        ],
        [
          unimplemented("Exec"),
          500,
          "rpc error: code = Unimplemented desc = method Exec not implemented",
        ],
        [new Error(`container not found ("baz")`), 500, `container not found ("baz")`],
      ];
      for (const [fail, status, body] of cases) {
        f.state.fail = fail;
        const got = { head: "" };
        assertEquals(
          await request(f, upgradeRequest("POST", "/exec/other/foo/baz?output=1"), got),
          { status, body },
        );
        if (status === 429) assert(/\r\nretry-after: 60\r\n/.test(got.head), got.head);
      }
      f.state.fail = undefined;
    });
    await t.step("the streaming server refuses: its answer relayed as is", async () => {
      f.streaming.setMode("refuse");
      try {
        const client = await Client.open(f);
        await client.send(upgradeRequest("POST", "/exec/other/foo/baz?output=1"));
        await client.readUntil("\r\n\r\n");
        assert(
          client.received.startsWith("HTTP/1.1 404 Not Found\r\nContent-Type"),
          client.received,
        );
        assertEquals(
          await client.readToEnd(),
          "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n" +
            "Content-Length: 18\r\n\r\n404 page not found",
        );
        client.close();
      } finally {
        f.streaming.setMode("upgrade");
      }
    });
    await t.step("the streaming server does not upgrade: 500", async () => {
      f.streaming.setMode("ok");
      try {
        assertEquals(await request(f, upgradeRequest("POST", "/exec/other/foo/baz?output=1")), {
          status: 500,
          body: "invalid upgrade response: status code 200\n",
        });
      } finally {
        f.streaming.setMode("upgrade");
      }
    });
    await t.step("routes: wrong method 405, wrong shape 404", async () => {
      assertEquals(
        await request(f, upgradeRequest("PUT", "/exec/other/foo/baz?output=1")),
        { status: 405, body: "405: Method Not Allowed" },
      );
      assertEquals(
        await request(f, upgradeRequest("POST", "/exec/other/foo?output=1")),
        { status: 404, body: "404: Page Not Found" },
      );
      assertEquals(
        await request(f, upgradeRequest("POST", "/exec/other/foo/a/b/c?output=1")),
        { status: 404, body: "404: Page Not Found" },
      );
    });
  });
});

Deno.test("TestServeExecInContainer: a streaming server that cannot be reached", async () => {
  await withFixture(async (f) => {
    // The runtime's URL names a port nothing listens on any more.
    await f.streaming.close();
    const res = await request(f, upgradeRequest("POST", "/exec/other/foo/baz?output=1"));
    assertEquals(res, {
      status: 500,
      body:
        `error dialing backend: dial tcp 127.0.0.1:${f.streaming.port}: connect: connection refused\n`,
    });
  });
});

Deno.test("TestServeAttachContainer", async (t) => {
  await withFixture(async (f) => {
    await t.step("stdout and stderr", async () => {
      const client = await openStream(
        f,
        upgradeRequest("POST", "/attach/other/foo/baz?output=1&error=1"),
      );
      client.close();
      assertEquals(f.calls, [{
        op: "attach",
        podFullName: "foo_other",
        uid: "",
        containerName: "baz",
        streamOpts: { stdin: false, stdout: true, stderr: true, tty: false },
      }]);
      assert(f.streaming.heads[0].startsWith("POST /attach/tok"), f.streaming.heads[0]);
    });
    await t.step("with the pod's UID, stdin and tty", async () => {
      f.calls.length = 0;
      const client = await openStream(
        f,
        upgradeRequest("GET", `/attach/other/foo/${testUID}/baz?input=1&tty=1`),
      );
      client.close();
      assertEquals(f.calls[0].uid, testUID);
      assertEquals(f.calls[0].streamOpts, { stdin: true, stdout: false, stderr: false, tty: true });
    });
    await t.step("no stream asked for: 400", async () => {
      assertEquals(await request(f, upgradeRequest("POST", "/attach/other/foo/baz")), {
        status: 400,
        body: "you must specify at least 1 of stdin, stdout, stderr",
      });
    });
  });
});

Deno.test("TestServePortForward", async (t) => {
  await withFixture(async (f) => {
    // A WebSocket request names its ports in the query (portforward.NewV4Options).
    const ws = (query: string) =>
      [
        `GET /portForward/other/foo${query} HTTP/1.1`,
        "Host: 127.0.0.1:10250",
        "Connection: Upgrade",
        "Upgrade: websocket",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Protocol: v4.channel.k8s.io",
      ].join("\r\n") + "\r\n\r\n";
    const refused: Array<[string, string, string]> = [
      ["no port", "", `query parameter "port" is required`],
      [
        "none number port",
        "?port=abc",
        `unable to parse "abc" as a port: strconv.ParseUint: parsing "abc": invalid syntax`,
      ],
      [
        "negative port",
        "?port=-1",
        `unable to parse "-1" as a port: strconv.ParseUint: parsing "-1": invalid syntax`,
      ],
      [
        "too large port",
        "?port=65536",
        `unable to parse "65536" as a port: strconv.ParseUint: parsing "65536": value out of range`,
      ],
      ["0 port", "?port=0", `port "0" must be > 0`],
    ];
    for (const [name, query, body] of refused) {
      await t.step(name, async () => {
        assertEquals(await request(f, ws(query)), { status: 400, body });
      });
    }
    const accepted: Array<[string, string, number[]]> = [
      ["min port", "?port=1", [1]],
      ["normal port", "?port=8000", [8000]],
      ["max port", "?port=65535", [65535]],
      ["several ports", "?port=8000,8001&port=9000", [8000, 8001, 9000]],
    ];
    for (const [name, query, ports] of accepted) {
      await t.step(name, async () => {
        f.calls.length = 0;
        (await openStream(f, ws(query))).close();
        assertEquals(f.calls.map((c) => c.ports), [ports]);
      });
    }
    await t.step("normal port with data forward (SPDY: no ports up front)", async () => {
      f.calls.length = 0;
      f.streaming.heads.length = 0;
      const client = await openStream(
        f,
        [
          "POST /portForward/other/foo HTTP/1.1",
          "Host: 127.0.0.1:10250",
          "Content-Length: 0",
          "Connection: Upgrade",
          "Upgrade: SPDY/3.1",
          "X-Stream-Protocol-Version: portforward.k8s.io",
        ].join("\r\n") + "\r\n\r\n",
      );
      client.close();
      assertEquals(f.calls, [{
        op: "portForward",
        podFullName: "foo_other",
        uid: testUID,
        containerName: "",
        ports: [],
      }]);
      assert(f.streaming.heads[0].startsWith("POST /portforward/tok"), f.streaming.heads[0]);
    });
    await t.step("normal port with uid", async () => {
      f.calls.length = 0;
      (await openStream(f, ws(`/${testUID}?port=8000`))).close();
      assertEquals(f.calls.length, 1);
    });
    await t.step("a UID that is not the pod's: 404 pod not found", async () => {
      assertEquals(await request(f, ws("/other-uid?port=8000")), {
        status: 404,
        body: "pod not found",
      });
    });
  });
});

Deno.test("TestServeRunInContainer", async (t) => {
  await withFixture(async (f) => {
    const post = (path: string) =>
      request(f, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`);
    await t.step("TestServeRunInContainer", async () => {
      f.calls.length = 0;
      assertEquals(await post("/run/other/foo/baz?cmd=ls%20-a"), { status: 200, body: "foo bar" });
      assertEquals(f.calls, [{
        op: "run",
        podFullName: "foo_other",
        uid: "",
        containerName: "baz",
        cmd: ["ls", "-a"],
      }]);
    });
    await t.step("TestServeRunInContainerWithUID", async () => {
      f.calls.length = 0;
      assertEquals(await post(`/run/other/foo/${testUID}/baz?cmd=ls%20-a`), {
        status: 200,
        body: "foo bar",
      });
      assertEquals(f.calls[0].uid, testUID);
    });
    await t.step("a failing command: 500 with the runtime's text", async () => {
      f.state.fail = new Error("command 'sh -c exit 3' exited with 3: ");
      try {
        assertEquals(await post("/run/other/foo/baz?cmd=sh%20-c%20exit%203"), {
          status: 500,
          body: "command 'sh -c exit 3' exited with 3: ",
        });
      } finally {
        f.state.fail = undefined;
      }
    });
    await t.step("no such pod: 404; GET: 405", async () => {
      assertEquals(await post("/run/other/bar/baz?cmd=ls"), {
        status: 404,
        body: "pod does not exist",
      });
      assertEquals(
        await request(f, "GET /run/other/foo/baz?cmd=ls HTTP/1.1\r\nHost: x\r\n\r\n"),
        { status: 405, body: "405: Method Not Allowed" },
      );
    });
  });
});

Deno.test("TestServeExecInContainerIdleTimeout: a stream's deadlines", async (t) => {
  await withFixture(async (f) => {
    await t.step("the plain-request deadlines do not cut a stream", async () => {
      const client = await openStream(f, upgradeRequest("POST", "/exec/other/foo/baz?output=1"));
      try {
        // Far past the idle, header and write timeouts of plain requests.
        await f.clock.step(
          defaultIdleTimeoutMs + defaultReadHeaderTimeoutMs + defaultWriteTimeoutMs + 600_000,
        );
        await client.send("still there");
        assert(await client.readUntil("STILL THERE"), client.received);
        assertEquals(f.server.stats.hijacked >= 1, true);
      } finally {
        client.close();
      }
    });
    await t.step("kubelet's 4 h: the stream ends, both sockets released", async () => {
      const client = await openStream(f, upgradeRequest("POST", "/exec/other/foo/baz?output=1"));
      const open = f.server.stats.open;
      assert(open >= 1);
      await f.clock.step(defaultStreamTimeoutMs);
      assertEquals(await client.readToEnd().then(() => client.closed), true);
      client.close();
      assertEquals(f.streaming.conns.size, 0);
    });
    await t.step("a client that stopped reading is reset at the deadline", async () => {
      const client = await openStream(f, upgradeRequest("POST", "/exec/other/foo/baz?output=1"));
      // The streaming server echoes: flood it while never reading the echo, until the proxy's
      // write to the client blocks and its read of the server stops.
      const chunk = "x".repeat(64 * 1024);
      // The send side blocks too, once every buffer on the way is full: not awaited.
      const flooding = (async () => {
        try {
          for (let i = 0; i < 400; i++) await client.send(chunk);
        } catch {
          // reset
        }
      })();
      await f.clock.step(defaultStreamTimeoutMs);
      await flooding;
      await client.readToEnd();
      assertEquals(client.closed, true);
      client.close();
    });
  });
});
