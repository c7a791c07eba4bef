/**
 * The HTTP prober: one GET per probe on a fresh connection, redirects handled like Go's `http.Client`
 * with kubelet's redirect policy, a single deadline over the whole exchange, and the body capped at
 * 10 KiB. Both schemes run on `Deno.connect` with a small HTTP/1.1 reader (conn.ts); HTTPS puts
 * `node:tls` over that connection without verification (tls_conn.ts). Not `fetch`: it refuses ports
 * such as 6000 and 10080, cannot skip TLS verification per request, and adds headers of its own;
 * Deno's own TLS client cannot skip verification either.
 *
 * Known differences from kubelet: HTTPS probes speak HTTP/1.1 only and offer only `http/1.1` by
 * ALPN (Go offers `h2` too and uses HTTP/2 when the server picks it),
 * sockets do not get `SO_LINGER` (Deno cannot set it), and network error texts after kubelet's own
 * `Get "<url>": ` prefix approximate Go's net stack.
 * Mirrors kubelet's pkg/probe/http/http.go and the redirect loop of Go's net/http client.go.
 * @module
 */
import { isIP } from "node:net";
import { domainToASCII } from "node:url";
import type { ProbeOutcome } from "../probe.ts";
import { ProbeResult } from "../probe.ts";
import type { Clock, ClockTimer } from "../../util/clock.ts";
import { RealClock } from "../../util/clock.ts";
import { goQuote } from "../../util/go_format.ts";
import { HeaderMap, validHeaderFieldName, validHeaderFieldValue } from "./header.ts";
import type { ProbeRequest } from "./request.ts";
import { joinHostPort, ProbeURL } from "./url.ts";
import { ConnExchange, type Upgrade } from "./conn.ts";
import { startTls } from "./tls_conn.ts";

/** The most response body an HTTP probe reads: `10 * 1 << 10` bytes, as kubelet. */
export const maxRespBodyLength = 10 * 1024;

/** The redirect limit of Go's client and of kubelet's redirect checker. */
const maxRedirects = 10;

/**
 * Probes an HTTP endpoint. Mirrors kubelet's `httpprobe.Prober`.
 *
 * @example
 * ```ts
 * import { newProbeRequest } from "./request.ts";
 *
 * const prober: HttpProber = newHttpProber();
 * const { request } = newProbeRequest("http://127.0.0.1:8080/healthz");
 * const outcome = await prober.probe(request!, { timeoutMs: 1000 });
 * ```
 */
export interface HttpProber {
  /** Sends the request and classifies the response; `timeoutMs` bounds the whole exchange. */
  probe(request: ProbeRequest, options: { timeoutMs: number }): Promise<ProbeOutcome>;
}

/**
 * Creates an HTTP prober. With `followNonLocalRedirects: false` (kubelet's default) a redirect to
 * another host name stops there and the 3xx response is the result (a Warning).
 *
 * @example
 * ```ts
 * const prober = newHttpProber({ followNonLocalRedirects: false });
 * ```
 */
export function newHttpProber(
  options: { followNonLocalRedirects?: boolean; clock?: Clock } = {},
): HttpProber {
  const checkRedirect = redirectChecker(options.followNonLocalRedirects ?? false);
  const clock = options.clock ?? new RealClock();
  return {
    probe(request, { timeoutMs }) {
      return doHTTPProbe(request, new ProbeClient({ timeoutMs, checkRedirect, clock }));
    },
  };
}

/**
 * Go's `http.Client` as kubelet builds it for HTTP lifecycle hooks: TLS unverified, redirects
 * checked as for probes, and no timeout unless `timeoutMs` is set (`0`: none, as Go's zero
 * `Client.Timeout`).
 *
 * @example
 * ```ts
 * const client = newHttpClient({ followNonLocalRedirects: false });
 * import type { ProbeRequest } from "./request.ts";
 *
 * declare const request: ProbeRequest;
 * const { response, error } = await client.do(request);
 * ```
 */
export function newHttpClient(
  options: { timeoutMs?: number; followNonLocalRedirects?: boolean; clock?: Clock } = {},
): HttpClient {
  return new ProbeClient({
    timeoutMs: options.timeoutMs ?? 0,
    checkRedirect: redirectChecker(options.followNonLocalRedirects ?? false),
    clock: options.clock ?? new RealClock(),
  });
}

/**
 * Go's `http.ErrUseLastResponse`: returned by a redirect check to stop following and use the 3xx
 * response as the final one.
 */
export const errUseLastResponse: Error = new Error("net/http: use last response");

/**
 * Decides whether to follow a redirect to `req`, given the requests already sent (`via[0]` is the
 * original). Returns `undefined` to follow, `errUseLastResponse` to stop, another error to fail.
 */
export type CheckRedirect = (req: ProbeRequest, via: readonly ProbeRequest[]) => Error | undefined;

/**
 * Kubelet's redirect policy. Following non-local redirects is Go's default policy (any host, at most
 * 10 redirects); otherwise a redirect to a different host name (port ignored) stops and the redirect
 * response becomes the result, and same-host redirects are followed up to 10.
 *
 * @example
 * ```ts
 * const check = redirectChecker(false);
 * ```
 */
export function redirectChecker(followNonLocalRedirects: boolean): CheckRedirect {
  if (followNonLocalRedirects) return defaultCheckRedirect;
  return (req, via) => {
    if (req.url.hostname !== via[0].url.hostname) return errUseLastResponse;
    if (via.length >= maxRedirects) return new Error(`stopped after ${maxRedirects} redirects`);
    return undefined;
  };
}

function defaultCheckRedirect(_req: ProbeRequest, via: readonly ProbeRequest[]): Error | undefined {
  return via.length >= maxRedirects
    ? new Error(`stopped after ${maxRedirects} redirects`)
    : undefined;
}

/** The final response of a client exchange, with its body still unread. */
export interface HttpResponse {
  /** HTTP status code. */
  statusCode: number;
  /**
   * Reads up to `limit` bytes of the body. Reaching the limit is not an error (the body is cut
   * there); a failed read is.
   */
  readAtMost(limit: number): Promise<{ body: Uint8Array; error?: Error }>;
  /** Releases the connection and the deadline. Idempotent. */
  close(): void;
}

/**
 * What `doHTTPProbe` needs from a client: Go's `client.Do` as one value. `error` texts are what users
 * see (`Get "http://10.0.0.1:80/": dial tcp 10.0.0.1:80: connect: connection refused`).
 */
export interface HttpClient {
  /** Sends the request, following redirects per the client's policy. */
  do(req: ProbeRequest): Promise<{ response?: HttpResponse; error?: Error }>;
}

/**
 * Runs one probe exchange and classifies it: 2xx → Success with the body as output; a final 3xx →
 * Warning `Probe terminated redirects, Response body: <body>`; anything else → Failure
 * `HTTP probe failed with statuscode: N` (never the body: https://issue.k8s.io/99425). A client error
 * is a Failure with the error text as output; a body read error is returned so the probe is retried.
 *
 * @example
 * ```ts
 * declare const request: Parameters<typeof doHTTPProbe>[0];
 * const client = newHttpClient({ followNonLocalRedirects: false });
 *
 * const outcome = await doHTTPProbe(request, client);
 * ```
 */
export async function doHTTPProbe(req: ProbeRequest, client: HttpClient): Promise<ProbeOutcome> {
  const { response, error } = await client.do(req);
  if (!response) return { result: ProbeResult.Failure, output: error?.message ?? "" };
  try {
    // Truncation at the limit is deliberate and silent; kubelet only logs it at V(4).
    const read = await response.readAtMost(maxRespBodyLength);
    if (read.error) return { result: ProbeResult.Failure, output: "", error: read.error };
    const body = new TextDecoder().decode(read.body);
    const status = response.statusCode;
    if (status >= 200 && status < 400) {
      if (status >= 300) {
        return {
          result: ProbeResult.Warning,
          output: `Probe terminated redirects, Response body: ${body}`,
        };
      }
      return { result: ProbeResult.Success, output: body };
    }
    return { result: ProbeResult.Failure, output: `HTTP probe failed with statuscode: ${status}` };
  } finally {
    response.close();
  }
}

/** Go's client timeout text while no response head has arrived yet. */
export const timeoutAwaitingHeaders =
  "context deadline exceeded (Client.Timeout exceeded while awaiting headers)";
const timeoutReadingBody =
  "context deadline exceeded (Client.Timeout or context cancellation while reading body)";

// Headers Go writes itself or never copies from Request.Header.
const reqWriteExcludeHeader = new Set([
  "Host",
  "User-Agent",
  "Content-Length",
  "Transfer-Encoding",
  "Trailer",
]);

// Headers Go drops when a redirect leaves the original domain.
const sensitiveHeaders = new Set([
  "Authorization",
  "Www-Authenticate",
  "Cookie",
  "Cookie2",
  "Proxy-Authorization",
  "Proxy-Authenticate",
]);

/** One deadline for the whole exchange: expiry runs every registered abort, once. */
class Deadline {
  expired = false;
  #timer?: ClockTimer;
  #onExpire = new Set<() => void>();

  constructor(clock: Clock, timeoutMs: number) {
    // Zero means no timeout, as for Go's Client.Timeout.
    if (timeoutMs > 0) this.#timer = clock.afterFunc(timeoutMs, () => this.#expire());
  }

  watch(fn: () => void): () => void {
    this.#onExpire.add(fn);
    return () => this.#onExpire.delete(fn);
  }

  stop(): void {
    this.#timer?.stop();
    this.#onExpire.clear();
  }

  #expire(): void {
    this.expired = true;
    for (const fn of [...this.#onExpire]) fn();
    this.#onExpire.clear();
  }
}

/** Go's `url.Error`: `Get "<url>": <cause>`. */
class URLError extends Error {
  constructor(readonly op: string, readonly url: string, readonly err: Error) {
    super(`${op} ${goQuote(url)}: ${err.message}`);
    this.name = "URLError";
  }
}

/** A sent request and its response, owned until closed. */
interface Exchange {
  statusCode: number;
  /** The first Location header, or "". */
  location: string;
  /** Reads up to `limit` body bytes (see `HttpResponse.readAtMost`). */
  readAtMost(limit: number): Promise<{ body: Uint8Array; error?: Error }>;
  /** Releases the connection. Idempotent. */
  close(): void;
}

/** Go's `http.Client` with keep-alives and compression off, no proxy, and TLS unverified. */
class ProbeClient implements HttpClient {
  #timeoutMs: number;
  #checkRedirect: CheckRedirect;
  #clock: Clock;

  constructor(options: { timeoutMs: number; checkRedirect: CheckRedirect; clock: Clock }) {
    this.#timeoutMs = options.timeoutMs;
    this.#checkRedirect = options.checkRedirect;
    this.#clock = options.clock;
  }

  async do(ireq: ProbeRequest): Promise<{ response?: HttpResponse; error?: Error }> {
    const deadline = new Deadline(this.#clock, this.#timeoutMs);
    const reqs: ProbeRequest[] = [];
    let req = ireq;
    let exchange: Exchange | undefined;
    let stripSensitiveHeaders = false;
    const fail = (url: string, err: Error) => {
      deadline.stop();
      return { error: new URLError("Get", url, err) };
    };
    for (;;) {
      if (exchange) {
        const loc = exchange.location;
        let u: ProbeURL;
        try {
          u = req.url.resolveReference(ProbeURL.parse(loc));
        } catch (e) {
          exchange.close();
          const parseError = `parse ${goQuote(loc)}: ${(e as Error).message}`;
          return fail(
            stripPassword(req.url),
            new Error(`failed to parse Location header ${goQuote(loc)}: ${parseError}`),
          );
        }
        // A custom Host survives only a relative Location (Go issue 22233).
        let host = "";
        // Go compares against the original request, so it survives several relative hops too.
        if (ireq.host !== "" && ireq.host !== ireq.url.host && !parsesAbsolute(loc)) {
          host = ireq.host;
        }
        if (
          !stripSensitiveHeaders && reqs[0].url.host !== u.host &&
          !shouldCopyHeaderOnRedirect(reqs[0].url, u)
        ) {
          stripSensitiveHeaders = true;
        }
        const headers = new HeaderMap();
        for (const [name, values] of ireq.headers.entries()) {
          if (stripSensitiveHeaders && sensitiveHeaders.has(name)) continue;
          for (const value of values) headers.add(name, value);
        }
        const next: ProbeRequest = { url: u, headers, host };
        const referer = refererForURL(reqs[reqs.length - 1].url, u, headers.get("Referer"));
        if (referer !== "") headers.set("Referer", referer);
        const err = this.#checkRedirect(next, reqs);
        if (err === errUseLastResponse) return { response: this.#response(exchange, deadline) };
        exchange.close();
        if (err) return fail(loc, err);
        req = next;
      }
      reqs.push(req);
      try {
        exchange = await send(req, deadline);
      } catch (e) {
        return fail(stripPassword(req.url), e as Error);
      }
      if (!isRedirect(exchange)) return { response: this.#response(exchange, deadline) };
    }
  }

  #response(exchange: Exchange, deadline: Deadline): HttpResponse {
    return {
      statusCode: exchange.statusCode,
      readAtMost: (limit) => exchange.readAtMost(limit),
      close: () => {
        deadline.stop();
        exchange.close();
      },
    };
  }
}

// Go follows 301/302/303/307/308; a 3xx without Location is final.
function isRedirect(exchange: Exchange): boolean {
  if (![301, 302, 303, 307, 308].includes(exchange.statusCode)) return false;
  return exchange.location !== "";
}

function parsesAbsolute(loc: string): boolean {
  try {
    return ProbeURL.parse(loc).isAbs();
  } catch {
    return false;
  }
}

// Auth headers may follow a redirect to the same domain or a subdomain of it.
function shouldCopyHeaderOnRedirect(initial: ProbeURL, dest: ProbeURL): boolean {
  const ihost = asciiHost(initial.hostname);
  const dhost = asciiHost(dest.hostname);
  if (ihost === "" || dhost === "") return false;
  if (dhost === ihost) return true;
  if (/[:%]/.test(dhost)) return false;
  return dhost.endsWith(`.${ihost}`);
}

// No Referer from an https page to an http one; a Referer the caller set wins.
function refererForURL(lastReq: ProbeURL, newReq: ProbeURL, explicitRef: string): string {
  if (lastReq.scheme === "https" && newReq.scheme === "http") return "";
  if (explicitRef !== "") return explicitRef;
  if (lastReq.user === undefined) return lastReq.toString();
  const withoutUser = lastReq.clone();
  withoutUser.user = undefined;
  return withoutUser.toString();
}

/**
 * The URL as Go's `url.Error` prints it: a password in it masked as `***`.
 *
 * @example
 * ```ts
 * import { ProbeURL } from "./url.ts";
 *
 * stripPassword(ProbeURL.parse("http://u:p@h/")); // "http://u:***@h/"
 * ```
 */
export function stripPassword(url: ProbeURL): string {
  const colon = url.user?.indexOf(":") ?? -1;
  if (url.user === undefined || colon < 0) return url.toString();
  const masked = url.clone();
  masked.user = `${url.user.slice(0, colon)}:***`;
  return masked.toString();
}

function asciiHost(host: string): string {
  // deno-lint-ignore no-control-regex
  return /^[\x00-\x7f]*$/.test(host) ? host.toLowerCase() : domainToASCII(host);
}

// RFC 3986 host characters Go accepts in a Host header.
const validHostHeader = /^[A-Za-z0-9!$%&'()*+,\-.:;=\[\]_~]*$/;

// Go's Request.write header block: Host, User-Agent, the rest sorted by name, then Connection: close.
function wireHeaders(req: ProbeRequest): string[] {
  for (const [name, values] of req.headers.entries()) {
    if (!validHeaderFieldName(name)) {
      throw new Error(`net/http: invalid header field name ${goQuote(name)}`);
    }
    for (const value of values) {
      if (!validHeaderFieldValue(value)) {
        throw new Error(`net/http: invalid header field value for ${goQuote(name)}`);
      }
    }
  }
  let host = req.host !== "" ? req.host : req.url.host;
  if (/[^ -~]/.test(host)) host = punycodeHostPort(host);
  if (!validHostHeader.test(host)) throw new Error("http: invalid Host header");
  const raw = ["Host", removeZone(host)];
  const userAgent = req.headers.has("User-Agent")
    ? req.headers.get("User-Agent")
    : "Go-http-client/1.1";
  if (userAgent !== "") raw.push("User-Agent", userAgent);
  const names = [...req.headers.entries()].filter(([name]) => !reqWriteExcludeHeader.has(name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [name, values] of names) {
    for (const value of values) raw.push(name, value.replace(/[\r\n]/g, " ").trim());
  }
  // Keep-alives are off: every probe asks the server to close, unless the caller already did.
  const connection = req.headers.get("Connection");
  if (!connection.split(",").some((t) => t.trim().toLowerCase() === "close")) {
    raw.push("Connection", "close");
  }
  return raw;
}

function punycodeHostPort(hostPort: string): string {
  const url = new ProbeURL();
  url.host = hostPort;
  const name = domainToASCII(url.hostname);
  return url.port === "" ? name : joinHostPort(name, url.port);
}

// "[fe80::1%eth0]:80" → "[fe80::1]:80": a zone means nothing to the server.
function removeZone(host: string): string {
  if (!host.startsWith("[")) return host;
  const close = host.lastIndexOf("]");
  const zone = host.lastIndexOf("%", close);
  return zone < 0 ? host : host.slice(0, zone) + host.slice(close);
}

async function send(req: ProbeRequest, deadline: Deadline): Promise<Exchange> {
  const { url } = req;
  if (url.scheme !== "http" && url.scheme !== "https") {
    throw new Error(`unsupported protocol scheme ${goQuote(url.scheme)}`);
  }
  if (url.host === "") throw new Error("http: no Host in request URL");
  if (deadline.expired) throw new Error(timeoutAwaitingHeaders);
  const hostname = url.hostname;
  const port = url.port !== "" ? Number(url.port) : url.scheme === "https" ? 443 : 80;
  const raw = wireHeaders(req);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`dial tcp: address ${joinHostPort(hostname, String(port))}: invalid port`);
  }
  let head = `GET ${req.url.requestURI()} HTTP/1.1\r\n`;
  for (let i = 0; i < raw.length; i += 2) head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  head += "\r\n";
  let upgrade: Upgrade | undefined;
  if (url.scheme === "https") {
    // SNI carries names only, as Go's TLS client.
    const servername = isIP(hostname) === 0 ? hostname : undefined;
    upgrade = (tcp, peers) => startTls(tcp, { servername, peers });
  }
  const exchange = new ConnExchange(hostname, port, { upgrade });
  let response;
  try {
    response = await exchange.send(head, deadline, { timeout: timeoutAwaitingHeaders });
  } catch (err) {
    exchange.close();
    throw err;
  }
  return {
    statusCode: response.statusCode,
    location: response.headers.get("Location")?.[0] ?? "",
    readAtMost: (limit) => exchange.readBody(limit, deadline, timeoutReadingBody),
    close: () => exchange.close(),
  };
}
