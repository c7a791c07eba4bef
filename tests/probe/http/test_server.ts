/**
 * Real servers on 127.0.0.1 for the HTTP probe tests: a `node:http` server shaped like Go's
 * httptest.Server, an HTTPS one with the committed throwaway certificate, and a raw TCP (or TLS)
 * server that records the request bytes exactly as they arrived.
 * @module
 */
import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import * as tls from "node:tls";
import { canonicalHeaderKey } from "../../../src/probe/http/mod.ts";

/** A running test server; `url` is `http://127.0.0.1:<port>` without a trailing slash, as Go's. */
export interface TestServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** A request handler, as for `http.createServer`. */
export type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

const testdata = new URL("./testdata/", import.meta.url);

/** Starts an HTTP server on 127.0.0.1 (or `host`), on any free port unless `port` is given. */
export function startServer(
  handler: Handler,
  options: { port?: number; host?: string } = {},
): Promise<TestServer> {
  return listen(http.createServer(handler), "http", options);
}

/** Starts an HTTPS server on 127.0.0.1 with the self-signed certificate in testdata/. */
export function startTLSServer(handler: Handler): Promise<TestServer> {
  const server = https.createServer({
    cert: Deno.readTextFileSync(new URL("cert.pem", testdata)),
    key: Deno.readTextFileSync(new URL("key.pem", testdata)),
  }, handler);
  return listen(server, "https", {});
}

async function listen(
  server: http.Server,
  scheme: string,
  options: { port?: number; host?: string },
): Promise<TestServer> {
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const bound = (server.address() as net.AddressInfo).port;
  return {
    url: `${scheme}://${host.includes(":") ? `[${host}]` : host}:${bound}`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A raw TCP (or TLS) server that keeps each request head (up to the blank line) and answers 200
 * "ok" (or `answer`).
 */
export interface RecordingServer extends TestServer {
  /** Request heads in arrival order, bytes decoded as Latin-1. */
  requests: string[];
  /** Number of TCP connections accepted. */
  connections: number;
  /** With `tls`: per connection, the SNI name the client sent (false: none). */
  servernames: (string | false)[];
  /** With `tls`: per connection, the ALPN protocol agreed (false: the client offered none). */
  alpnProtocols: (string | false)[];
}

/**
 * Starts the recording server on 127.0.0.1; rejects when `port` cannot be bound. With `tls` it
 * speaks TLS with the certificate in testdata/ and offers ALPN `h2` and `http/1.1`.
 */
export async function startRecordingServer(
  options: { port?: number; tls?: boolean; answer?: (write: (s: string) => void) => void } = {},
): Promise<RecordingServer> {
  const sockets = new Set<net.Socket>();
  const recorder = {
    requests: [] as string[],
    connections: 0,
    servernames: [] as (string | false)[],
    alpnProtocols: [] as (string | false)[],
  };
  const answer = options.answer ??
    ((write) => write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"));
  const onSocket = (socket: net.Socket) => {
    recorder.connections++;
    if (socket instanceof tls.TLSSocket) {
      const named = socket as tls.TLSSocket & { servername?: string | false };
      recorder.servernames.push(named.servername ?? false);
      recorder.alpnProtocols.push(socket.alpnProtocol ?? false);
    }
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let head = "";
    socket.on("data", (chunk: Uint8Array) => {
      head += new TextDecoder("latin1").decode(chunk);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      recorder.requests.push(head.slice(0, end + 4));
      head = "";
      const parts: string[] = [];
      answer((s) => parts.push(s));
      socket.end(parts.join(""));
    });
  };
  const server = options.tls
    ? tls.createServer({
      cert: Deno.readTextFileSync(new URL("cert.pem", testdata)),
      key: Deno.readTextFileSync(new URL("key.pem", testdata)),
      ALPNProtocols: ["h2", "http/1.1"],
    }, onSocket)
    : net.createServer(onSocket);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `${options.tls ? "https" : "http"}://127.0.0.1:${port}`,
    port,
    get requests() {
      return recorder.requests;
    },
    get connections() {
      return recorder.connections;
    },
    get servernames() {
      return recorder.servernames;
    },
    get alpnProtocols() {
      return recorder.alpnProtocols;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * The request headers as Go's server shows them in `r.Header`: canonical names, values in order,
 * `Host` moved out to `r.Host`.
 */
export function goRequestHeader(req: http.IncomingMessage): Map<string, string[]> {
  const header = new Map<string, string[]>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = canonicalHeaderKey(req.rawHeaders[i]);
    if (name === "Host") continue;
    header.set(name, [...(header.get(name) ?? []), req.rawHeaders[i + 1]]);
  }
  return header;
}

/** Go's `r.Host`. */
export function goRequestHost(req: http.IncomingMessage): string {
  return req.headers.host ?? "";
}

/** Go's `http.Redirect` for a GET: the status, a Location, and a short HTML body. */
export function redirect(res: http.ServerResponse, location: string, code: number): void {
  res.writeHead(code, { Location: location, "Content-Type": "text/html; charset=utf-8" });
  res.end(`<a href="${location}">Redirect</a>.\n\n`);
}

/** A raw TCP server that answers every request with fixed bytes. */
export interface RawServer extends TestServer {
  /** Resolves once the answer to the first connection is written in full. */
  answered: Promise<void>;
}

/**
 * Starts a raw TCP server on 127.0.0.1 that reads each request head, writes `answer` (a string is
 * taken as Latin-1, one byte per character) and closes the connection, or with `hold` keeps it
 * open until `close()`.
 */
export function startRawServer(
  answer: string | Uint8Array,
  options: { hold?: boolean } = {},
): RawServer {
  const bytes = typeof answer === "string"
    ? Uint8Array.from(answer, (ch) => ch.charCodeAt(0))
    : answer;
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  let answered!: () => void;
  const answeredPromise = new Promise<void>((resolve) => answered = resolve);
  const serve = async (conn: Deno.Conn) => {
    open.add(conn);
    try {
      const buf = new Uint8Array(8192);
      let seen = "";
      while (!seen.includes("\r\n\r\n")) {
        const n = await conn.read(buf);
        if (n === null) return;
        seen += new TextDecoder("latin1").decode(buf.subarray(0, n));
      }
      for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
      answered();
      if (options.hold) return;
      conn.close();
      open.delete(conn);
    } catch {
      // The client went away first.
    }
  };
  const serving = (async () => {
    for await (const conn of listener) serve(conn);
  })();
  const port = (listener.addr as Deno.NetAddr).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    answered: answeredPromise,
    close: async () => {
      listener.close();
      for (const conn of open) {
        try {
          conn.close();
        } catch {
          // Already closed.
        }
      }
      await serving.catch(() => {});
    },
  };
}
