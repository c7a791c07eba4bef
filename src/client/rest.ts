/**
 * The REST client under the clientset: builds API paths and query strings, sends JSON over Deno's
 * `fetch` (mTLS through `Deno.createHttpClient`), waits on the QPS/burst limiter before each request,
 * honours `Retry-After` on 429/5xx like client-go, turns failures into `StatusError`, and opens
 * watches as line-delimited JSON streams that always report their end. Bodies are parsed with
 * `JSON.parse` and sent with `JSON.stringify`: unknown fields and time strings pass through untouched.
 * Mirrors k8s.io/client-go/rest (config.go, client.go, request.go) and
 * k8s.io/apimachinery/pkg/watch/streamwatcher.go.
 * @module
 */
import type { Status, WatchEvent } from "../api/meta/v1/mod.ts";
import { type Clock, RealClock } from "../util/clock.ts";
import {
  AlwaysAcceptRateLimiter,
  type RateLimiter,
  TokenBucketRateLimiter,
} from "../util/flowcontrol/throttle.ts";
import { goArch, goDuration, goOS, goQuote } from "../util/go_format.ts";
import { kubernetesVersion } from "../version.ts";
import { V } from "../util/log.ts";
import { StatusError } from "./errors.ts";
import type { Watch } from "../api/watch/watch.ts";
import { concat } from "../util/bytes.ts";

/** How to reach and authenticate to an API server (client-go's `rest.Config`, the parts used). */
export interface RestConfig {
  /** `https://host:port` (a path prefix is allowed). */
  host: string;
  /** PEM CA bundle that signs the server's certificate. */
  caData?: string;
  /** PEM client certificate (chain) and its key, for mTLS. */
  certData?: string;
  keyData?: string;
  /** A bearer token, or a file re-read when it changes (service-account style). */
  bearerToken?: string;
  bearerTokenFile?: string;
  /** Basic auth (rare; kept because kubeconfigs may carry it). */
  username?: string;
  password?: string;
  /**
   * Skip verifying the server's certificate. Deno's `createHttpClient` has no such switch: it only
   * works when Deno runs with `--unsafely-ignore-certificate-errors`; otherwise the request fails.
   */
  insecureSkipTLSVerify?: boolean;
  /** `User-Agent` (default: `probelet/v1.35 (<os>/<arch>) kubernetes/probelet`). */
  userAgent?: string;
  /** Requests per second; 0 → client-go's default 5, negative → no limit. */
  qps?: number;
  /** Bucket size; 0 → client-go's default 10. */
  burst?: number;
  /** An explicit limiter (wins over qps/burst). */
  rateLimiter?: RateLimiter;
  /** Timeout of each non-watch request in milliseconds (0 or absent: none). */
  timeoutMs?: number;
}

/** One request. `path` is absolute (`/api/v1/nodes/n1`). */
export interface RestRequest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** Sent as is when a string, JSON-encoded otherwise. */
  body?: unknown;
  /** Content type of the body (default `application/json`). */
  contentType?: string;
  signal?: AbortSignal;
}

/** Options of `RESTClient`. */
export interface RESTClientOptions {
  /** The clock for throttling, timeouts, Retry-After sleeps and watch deadlines. */
  clock?: Clock;
  /** The fetch to use (tests); default `fetch` with the config's TLS client. */
  fetch?: typeof fetch;
  /** Retries on 429/5xx with `Retry-After` (client-go: 10). */
  maxRetries?: number;
}

/** Options of `watch`. */
export interface WatchRequestOptions {
  /**
   * End the stream when nothing (not even a bookmark) arrived for this long; 0 = never. The
   * reflector then re-watches from the last resourceVersion, as after a server-side close. A
   * watch request the server has not answered after this long fails, and the client's pooled
   * connections are dropped (`closeAllConns`).
   */
  idleTimeoutMs?: number;
}

/** `probelet/v1.35 (linux/amd64) kubernetes/probelet`, the shape of client-go's default agent. */
export function defaultUserAgent(): string {
  return `probelet/v${kubernetesVersion.major}.${kubernetesVersion.minor} (${goOS()}/${goArch()}) kubernetes/probelet`;
}

/** A limiter for `config`: explicit, none (qps < 0), or a token bucket (client-go defaults 5/10). */
export function rateLimiterFor(config: RestConfig, clock: Clock): RateLimiter {
  if (config.rateLimiter) return config.rateLimiter;
  const qps = config.qps ?? 0;
  if (qps < 0) return new AlwaysAcceptRateLimiter();
  return new TokenBucketRateLimiter(clock, {
    qps: qps === 0 ? 5 : qps,
    burst: (config.burst ?? 0) === 0 ? 10 : config.burst!,
  });
}

/**
 * Sends requests to one API server.
 *
 * @example
 * ```ts
 * declare const caData: string;
 * declare const certData: string;
 * declare const keyData: string;
 *
 * const rest = new RESTClient({ host: "https://127.0.0.1:6443", caData, certData, keyData });
 * const node = await rest.json({ method: "GET", path: "/api/v1/nodes/node-1" });
 * ```
 */
export class RESTClient {
  /** Where and how it connects. */
  readonly config: RestConfig;
  readonly #clock: Clock;
  readonly #fetch: typeof fetch;
  readonly #limiter: RateLimiter;
  readonly #maxRetries: number;
  readonly #base: URL;
  #httpClient?: Deno.HttpClient;
  /** TLS settings of `#httpClient`, to dial afresh after `closeAllConns()`. */
  #tls?: Deno.CreateHttpClientOptions;
  #closed = false;
  #token?: { value: string; readAt: number };

  /** A client for `config`; the TLS client is created once and shared by all requests. */
  constructor(config: RestConfig, options: RESTClientOptions = {}) {
    this.config = config;
    this.#clock = options.clock ?? new RealClock();
    this.#limiter = rateLimiterFor(config, this.#clock);
    this.#maxRetries = options.maxRetries ?? 10;
    let base: URL;
    try {
      base = new URL(config.host);
    } catch {
      throw new Error(`invalid API server host ${JSON.stringify(config.host)}: not a URL`);
    }
    this.#base = base;
    if (options.fetch) {
      this.#fetch = options.fetch;
    } else {
      const tls = base.protocol === "https:" ? tlsOptions(config) : undefined;
      if (tls) {
        this.#tls = tls;
        this.#httpClient = Deno.createHttpClient(tls);
        // Read at each request: closeAllConns() swaps the client.
        this.#fetch = (input, init) => {
          if (this.#closed || !this.#httpClient) {
            return Promise.reject(new Error(`client for ${config.host} is closed`));
          }
          return fetch(input, { ...init, client: this.#httpClient });
        };
      } else {
        this.#fetch = fetch;
      }
    }
  }

  /** Releases the TLS client's connections. */
  close(): void {
    this.#closed = true;
    this.#httpClient?.close();
    this.#httpClient = undefined;
  }

  /**
   * Drops every pooled TLS connection, so the next request dials afresh (kubelet's closeAllConns
   * after repeated heartbeat failures: a half-open connection would fail every request sent on
   * it). Requests in flight on the old connections fail. Plain HTTP uses Deno's shared pool and is
   * left alone.
   */
  closeAllConns(): void {
    if (this.#closed || !this.#tls || !this.#httpClient) return;
    const old = this.#httpClient;
    this.#httpClient = Deno.createHttpClient(this.#tls);
    old.close();
  }

  /** The full URL of `path` with `query` (undefined values are left out). */
  url(path: string, query: RestRequest["query"] = {}): URL {
    const prefix = this.#base.pathname.replace(/\/$/, "");
    const url = new URL(prefix + path, this.#base);
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== "") url.searchParams.set(k, String(v));
    }
    return url;
  }

  /** Sends `req` and returns the parsed JSON body (undefined for an empty body). */
  async json<T>(req: RestRequest): Promise<T> {
    const res = await this.#send(req, this.config.timeoutMs ?? 0);
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      // client-go's transformResponse words a body that could not be read this way.
      throw new Error(
        "unexpected error when reading response body. Please retry. Original error: " +
          bodyErrorText(err),
        { cause: err },
      );
    }
    if (text === "") return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new Error(
        `${req.method} ${req.path}: the server sent a body that is not JSON: ${
          (err as Error).message
        }`,
      );
    }
  }

  /**
   * Opens a watch (GET with `watch=true`): resolves once the server answered 200, then streams
   * events. The stream ends on server close, `stop()`, the idle timeout, or `timeoutSeconds` plus a
   * minute when the server never closes; it throws when the connection breaks.
   */
  async watch<T>(req: RestRequest, options: WatchRequestOptions = {}): Promise<Watch<T>> {
    const controller = new AbortController();
    const signals = req.signal ? [req.signal, controller.signal] : [controller.signal];
    const query = { ...req.query, watch: "true" };
    const idleTimeoutMs = options.idleTimeoutMs ?? 0;
    // The server answers a watch at once. No answer for the idle timeout means the pooled
    // connection is dead (Deno's fetch sends no HTTP/2 pings to find out): drop the pool, so
    // that the next attempt dials afresh instead of queueing on it again.
    const unanswered = idleTimeoutMs > 0
      ? this.#clock.afterFunc(idleTimeoutMs, () => {
        controller.abort(
          new DOMException(
            `watch ${req.path}: no answer after ${idleTimeoutMs} ms; reconnecting`,
            "TimeoutError",
          ),
        );
        this.closeAllConns();
      })
      : undefined;
    let res: Response;
    try {
      res = await this.#send({ ...req, query, signal: AbortSignal.any(signals) }, 0);
    } catch (err) {
      // Our own deadline says why, rather than the cancelled request.
      if (controller.signal.aborted && !req.signal?.aborted) throw controller.signal.reason;
      throw err;
    } finally {
      unanswered?.stop();
    }
    const timeoutSeconds = Number(req.query?.timeoutSeconds ?? 0);
    return new StreamWatcher<T>(res, controller, {
      clock: this.#clock,
      idleTimeoutMs,
      deadlineMs: timeoutSeconds > 0 ? (timeoutSeconds + 60) * 1000 : 0,
      what: `${req.path}`,
    });
  }

  // Sends one request with throttling and Retry-After handling; non-2xx becomes a StatusError.
  async #send(req: RestRequest, timeoutMs: number): Promise<Response> {
    for (let attempt = 0;; attempt++) {
      try {
        await this.#limiter.wait({ signal: req.signal });
      } catch (err) {
        if (!req.signal?.aborted) throw err;
        throw new Error(
          `client rate limiter Wait returned an error: ${contextErrorText(req.signal.reason)}`,
          { cause: err },
        );
      }
      // As client-go, the timeout is both a deadline here and `timeout=` for the server.
      const timeout = timeoutMs > 0 ? new AbortController() : undefined;
      const timer = timeout
        ? this.#clock.afterFunc(timeoutMs, () => {
          timeout.abort(
            new DOMException(
              `${req.method} ${req.path}: timed out after ${timeoutMs} ms`,
              "TimeoutError",
            ),
          );
        })
        : undefined;
      const signals = [req.signal, timeout?.signal].filter((s): s is AbortSignal => !!s);
      let res: Response;
      const url = this.url(
        req.path,
        timeoutMs > 0 ? { ...req.query, timeout: goDuration(timeoutMs) } : req.query,
      );
      try {
        res = await this.#fetch(url, {
          method: req.method,
          headers: await this.#headers(req),
          body: req.body === undefined
            ? undefined
            : typeof req.body === "string"
            ? req.body
            : JSON.stringify(req.body),
          signal: signals.length ? AbortSignal.any(signals) : undefined,
        });
      } catch (err) {
        timer?.stop();
        const cancelled = timeout?.signal.aborted ? timeout.signal : req.signal;
        if (cancelled?.aborted) throw new RequestError(req.method, url, cancelled.reason, err);
        const failure = transportError(req, url, err, this.config);
        // A GET that lost its connection is retried after a second (client-go does the same for
        // "connection reset" and EOF); writes are not, as they may have happened.
        if (
          req.method === "GET" && attempt < this.#maxRetries && !req.signal?.aborted &&
          isConnectionLoss(failure)
        ) {
          V(4).info("Connection lost; retrying", {
            method: req.method,
            path: req.path,
            err: failure.message,
            attempt: attempt + 1,
          });
          await this.#pause(1000, req, url);
          continue;
        }
        throw failure;
      }
      if (res.ok) {
        // The timeout covers reading the body too; it stops when the caller is done with it.
        if (timer) return withTimerStopped(res, timer);
        return res;
      }
      const retryAfter = retryAfterSeconds(res);
      if (
        retryAfter !== undefined && (res.status === 429 || res.status >= 500) &&
        attempt < this.#maxRetries
      ) {
        // A body about to be thrown away is read only when small (client-go's
        // readAndCloseResponseBody), so a server cannot make a retry read without end.
        await discardBody(res);
        timer?.stop();
        V(4).info("Got a Retry-After response", {
          method: req.method,
          path: req.path,
          code: res.status,
          retryAfter,
          attempt: attempt + 1,
        });
        await this.#pause(retryAfter * 1000, req, url);
        continue;
      }
      const body = await res.text().catch(() => "");
      timer?.stop();
      throw statusErrorFromResponse(req, res, body, retryAfter);
    }
  }

  // The wait before a retry; the caller cancelling it ends the request with a context error.
  async #pause(ms: number, req: RestRequest, url: URL): Promise<void> {
    try {
      await this.#clock.sleep(ms, { signal: req.signal });
    } catch (err) {
      if (!req.signal?.aborted) throw err;
      throw new RequestError(req.method, url, req.signal.reason, err);
    }
  }

  async #headers(req: RestRequest): Promise<Headers> {
    const headers = new Headers({
      "Accept": "application/json, */*",
      "User-Agent": this.config.userAgent ?? defaultUserAgent(),
    });
    if (req.body !== undefined) headers.set("Content-Type", req.contentType ?? "application/json");
    const token = await this.#bearerToken();
    if (token) headers.set("Authorization", `Bearer ${token}`);
    else if (this.config.username !== undefined) {
      const pair = `${this.config.username}:${this.config.password ?? ""}`;
      headers.set("Authorization", `Basic ${btoa(pair)}`);
    }
    return headers;
  }

  // A token file is re-read at most once a minute (client-go's cachingTokenSource does the same).
  async #bearerToken(): Promise<string | undefined> {
    if (this.config.bearerToken) return this.config.bearerToken;
    const file = this.config.bearerTokenFile;
    if (!file) return undefined;
    const now = this.#clock.now();
    if (!this.#token || now - this.#token.readAt >= 60_000) {
      try {
        this.#token = { value: (await Deno.readTextFile(file)).trim(), readAt: now };
      } catch (err) {
        if (!this.#token) throw new Error(`reading token file ${file}: ${(err as Error).message}`);
      }
    }
    return this.#token?.value;
  }
}

function tlsOptions(
  config: RestConfig,
): Deno.CreateHttpClientOptions & Partial<Deno.TlsCertifiedKeyPem> {
  const options: Deno.CreateHttpClientOptions & Partial<Deno.TlsCertifiedKeyPem> = {};
  if (config.caData) options.caCerts = [config.caData];
  if (config.certData || config.keyData) {
    if (!config.certData || !config.keyData) {
      throw new Error("client certificate and key must be given together");
    }
    options.cert = config.certData;
    options.key = config.keyData;
  }
  return options;
}

// Keeps the response usable while making sure the timeout timer is stopped once it is consumed.
function withTimerStopped(res: Response, timer: { stop(): boolean }): Response {
  const text = res.text.bind(res);
  const json = res.json.bind(res);
  res.text = () => text().finally(() => timer.stop());
  res.json = () => json().finally(() => timer.stop());
  return res;
}

/** The most of a retried response's body read before it is dropped (client-go: 2 KiB). */
export const maxBodySlurpBytes = 2 << 10;

// Reads at most maxBodySlurpBytes of a body whose declared length fits, then releases it.
async function discardBody(res: Response): Promise<void> {
  const body = res.body;
  if (!body) return;
  const length = Number(res.headers.get("Content-Length") ?? -1);
  const reader = body.getReader();
  try {
    let read = 0;
    while (length >= 0 && length <= maxBodySlurpBytes && read < maxBodySlurpBytes) {
      const chunk = await reader.read();
      if (chunk.done) break;
      read += chunk.value.length;
    }
  } catch {
    // A body that fails to read is dropped all the same.
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function retryAfterSeconds(res: Response): number | undefined {
  const header = res.headers.get("Retry-After");
  if (header === null) return undefined;
  const seconds = Number(header);
  return Number.isInteger(seconds) && seconds >= 0 ? seconds : undefined;
}

/**
 * A request cut short by its timeout or its caller, worded as Go's `url.Error` around a context
 * error: `Get "https://host/api/v1/nodes/n1?timeout=10s": context deadline exceeded`. `name` is
 * `TimeoutError` for a deadline and `AbortError` for a cancellation.
 *
 * @example
 * ```ts
 * declare const rest: RESTClient;
 *
 * try {
 *   await rest.json({ method: "GET", path: "/api/v1/nodes/n1" });
 * } catch (err) {
 *   if (err instanceof RequestError && err.timeout) console.log(err.message);
 * }
 * ```
 */
export class RequestError extends Error {
  /** The method as Go's `url.Error.Op` prints it (`Get`, `Patch`). */
  readonly op: string;
  /** The full URL of the request. */
  readonly url: string;
  /** True for a deadline (Go's `Timeout()`), false for a cancellation. */
  readonly timeout: boolean;

  /** The error for `method` on `url`, cut by an abort with `reason`. */
  constructor(method: string, url: URL | string, reason: unknown, cause?: unknown) {
    const op = method.slice(0, 1) + method.slice(1).toLowerCase();
    const text = contextErrorText(reason);
    super(`${op} ${goQuote(String(url))}: ${text}`, { cause: cause ?? reason });
    this.op = op;
    this.url = String(url);
    this.timeout = text === contextDeadlineExceeded;
    this.name = this.timeout ? "TimeoutError" : "AbortError";
  }
}

const contextDeadlineExceeded = "context deadline exceeded";

// Go's context errors: a signal aborted for a deadline (`TimeoutError`) is
// `context deadline exceeded`; any other abort is `context canceled`.
function contextErrorText(reason: unknown): string {
  return (reason as Error | undefined)?.name === "TimeoutError"
    ? contextDeadlineExceeded
    : "context canceled";
}

// The error text of a body read that failed: a context error when the read was aborted.
function bodyErrorText(err: unknown): string {
  const e = err as Error | undefined;
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return contextErrorText(e);
  return e?.message ?? String(err);
}

function transportError(req: RestRequest, url: URL, err: unknown, config: RestConfig): Error {
  const e = err as Error;
  if (e?.name === "AbortError" || e?.name === "TimeoutError") return e;
  // Deno's fetch says "fetch failed" and keeps the reason in `cause`.
  const cause = (e?.cause as Error | undefined)?.message;
  let message = `${req.method} ${url}: ${e?.message ?? String(err)}${cause ? `: ${cause}` : ""}`;
  if (config.insecureSkipTLSVerify && /certificate|tls|UnknownIssuer/i.test(message)) {
    message +=
      " (the kubeconfig sets insecure-skip-tls-verify, which Deno honours only when started " +
      `with --unsafely-ignore-certificate-errors=${url.hostname})`;
  }
  return new Error(message, { cause: err });
}

// A connection that broke before an answer (reset, closed, EOF, HTTP/2 connection lost).
function isConnectionLoss(err: Error): boolean {
  return /connection (reset|closed)|broken pipe|unexpected eof|connection lost/i.test(
    err.message,
  );
}

// Generic messages by code, as apimachinery's NewGenericServerResponse words them.
const genericReasons: Record<number, [string, string]> = {
  400: ["BadRequest", "the server rejected our request for an unknown reason"],
  401: ["Unauthorized", "the server has asked for the client to provide credentials"],
  403: ["Forbidden", "the server does not allow access to the requested resource"],
  404: ["NotFound", "the server could not find the requested resource"],
  405: ["MethodNotAllowed", "the server does not allow this method on the requested resource"],
  406: [
    "NotAcceptable",
    "the server was unable to respond with a content type that the client supports",
  ],
  409: ["Conflict", "the server reported a conflict"],
  410: ["Gone", "the server could not find the requested resource"],
  415: ["UnsupportedMediaType", "the server does not support the requested media type"],
  422: ["Invalid", "the server rejected our request due to an error in our request"],
  429: [
    "TooManyRequests",
    "the server has received too many requests and has asked us to try again later",
  ],
  500: ["InternalError", "an error on the server has prevented the request from succeeding"],
  503: ["ServiceUnavailable", "the server is currently unable to handle the request"],
  504: ["Timeout", "the server was unable to return a response in the time allotted"],
};

/**
 * The `StatusError` for a failed response: the server's own `Status` when the body is one,
 * otherwise a generic status for the HTTP code (with the body as the message's detail).
 */
export function statusErrorFromResponse(
  req: Pick<RestRequest, "method" | "path">,
  res: { status: number },
  body: string,
  retryAfter?: number,
): StatusError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const status = parsed as Status | undefined;
  if (status && typeof status === "object" && status.kind === "Status") {
    const full: Status = { ...status, code: status.code || res.status };
    if (retryAfter !== undefined && !full.details?.retryAfterSeconds) {
      full.details = { ...full.details, retryAfterSeconds: retryAfter };
    }
    return new StatusError(full);
  }
  const [reason, text] = genericReasons[res.status] ??
    (res.status >= 500 ? genericReasons[500] : ["", `unexpected status code ${res.status}`]);
  const detail = body.trim() ? ` (${req.method} ${req.path}: ${body.trim().slice(0, 200)})` : "";
  return new StatusError({
    code: res.status,
    reason,
    message: text + detail,
    details: retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : undefined,
  });
}

/** Why a watch stream ended without an error. */
export type WatchEndReason = "server-closed" | "stopped" | "idle" | "deadline";

/**
 * Decodes a line-delimited watch stream into events. Never goes deaf: each way the stream can end
 * (server close, `stop()`, idle timeout, a deadline past the server's own `timeoutSeconds`)
 * finishes the iteration, and a broken connection makes it throw.
 */
export class StreamWatcher<T> implements Watch<T> {
  readonly #res: Response;
  readonly #controller: AbortController;
  readonly #clock: Clock;
  readonly #idleTimeoutMs: number;
  readonly #what: string;
  #idleTimer?: { stop(): boolean };
  #deadlineTimer?: { stop(): boolean };
  #ending?: WatchEndReason;
  /** Set once the iteration has finished without an error. */
  endReason?: WatchEndReason;

  /** Wraps an accepted watch response; `controller` aborts its fetch. */
  constructor(
    res: Response,
    controller: AbortController,
    options: { clock: Clock; idleTimeoutMs: number; deadlineMs: number; what: string },
  ) {
    this.#res = res;
    this.#controller = controller;
    this.#clock = options.clock;
    this.#idleTimeoutMs = options.idleTimeoutMs;
    this.#what = options.what;
    if (options.deadlineMs > 0) {
      this.#deadlineTimer = this.#clock.afterFunc(options.deadlineMs, () => this.#end("deadline"));
    }
    this.#armIdle();
  }

  /** Ends the watch; the iteration finishes without an error. */
  stop(): void {
    this.#end("stopped");
  }

  #end(reason: WatchEndReason): void {
    if (this.#ending) return;
    this.#ending = reason;
    this.#idleTimer?.stop();
    this.#deadlineTimer?.stop();
    this.#controller.abort();
    // A body nobody reads must still be released.
    if (!this.#res.bodyUsed) this.#res.body?.cancel().catch(() => {});
  }

  #armIdle(): void {
    if (this.#idleTimeoutMs <= 0 || this.#ending) return;
    this.#idleTimer?.stop();
    this.#idleTimer = this.#clock.afterFunc(this.#idleTimeoutMs, () => this.#end("idle"));
  }

  /**
   * Yields each event; `ERROR` events carry a `Status`. A line that is not an event, or one longer
   * than {@linkcode maxWatchEventBytes}, ends the watch with a client-side `ERROR` event, as
   * client-go's StreamWatcher reports a decoding failure (the reflector then re-lists).
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<WatchEvent<T>> {
    const body = this.#res.body;
    if (!body || this.#ending) {
      this.#finish("server-closed");
      return;
    }
    const reader = body.getReader();
    const framer = new WatchLineFramer();
    const text = new TextDecoder();
    let broken = false;
    try {
      reading: for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (err) {
          if (this.#ending) break;
          broken = true;
          throw new Error(`watch ${this.#what}: ${(err as Error).message}`, { cause: err });
        }
        if (chunk.done) break;
        this.#armIdle();
        let lines: Uint8Array[];
        try {
          lines = framer.push(chunk.value);
        } catch (err) {
          yield this.#decodeFailure(err as Error);
          break;
        }
        for (const line of lines) {
          if (this.#ending) break reading;
          const event = this.#decode(text.decode(line).trim());
          if (event) yield event;
          if (event?.type === "ERROR" && this.#ending) break reading;
        }
        if (this.#ending) break;
      }
      const rest = this.#ending ? undefined : framer.rest();
      if (rest) {
        // A last event without its newline still counts; a cut one is an unexpected EOF, which
        // client-go logs at V(1) and treats as a close (no ERROR event).
        const line = text.decode(rest).trim();
        let event: WatchEvent<T> | undefined;
        try {
          event = JSON.parse(line);
        } catch (err) {
          V(1).info("Unexpected EOF during watch stream event decoding", {
            err: (err as Error).message,
          });
        }
        if (event !== undefined) {
          const decoded = this.#decode(line);
          if (decoded) yield decoded;
        }
      }
    } finally {
      const ended = this.#ending ?? "server-closed";
      this.#end(ended);
      reader.cancel().catch(() => {});
      if (!broken) this.#finish(ended);
    }
  }

  #finish(reason: WatchEndReason): void {
    this.endReason ??= reason;
  }

  // An event, undefined for a blank line, or the ERROR event that ends a watch on a bad line.
  #decode(line: string): WatchEvent<T> | undefined {
    if (!line) return undefined;
    let event: WatchEvent<T>;
    try {
      event = JSON.parse(line);
    } catch (err) {
      return this.#decodeFailure(err as Error);
    }
    if (!event || typeof event.type !== "string" || !("object" in event)) {
      return this.#decodeFailure(new Error(`not a watch event: ${line.slice(0, 200)}`));
    }
    return event;
  }

  // client-go's StreamWatcher turns a decoding error into an ERROR event built by its client error
  // reporter (500, verb GET, cause ClientWatchDecoding) and stops reading.
  #decodeFailure(err: Error): WatchEvent<T> {
    this.#end("stopped");
    const message = `unable to decode an event from the watch stream: ${err.message}`;
    return {
      type: "ERROR",
      object: clientWatchDecodingStatus(message) as unknown as T,
    };
  }
}

/**
 * The longest watch event accepted, in bytes: apimachinery's streaming decoder grows its buffer up
 * to 16 MiB and fails a longer frame with {@linkcode errObjectTooLarge}.
 */
export const maxWatchEventBytes = 16 * 1024 * 1024;

/** apimachinery's `streaming.ErrObjectTooLarge` text. */
export const errObjectTooLarge = "object to decode was longer than maximum allowed size";

/**
 * Splits a watch stream into lines in time linear in its length: each chunk is scanned once for
 * newlines, and the unfinished line is kept as a list of chunks, at most
 * {@linkcode maxWatchEventBytes} long.
 *
 * @example
 * ```ts
 * const framer = new WatchLineFramer();
 * framer.push(new TextEncoder().encode('{"type":"ADDED"')); // []
 * framer.push(new TextEncoder().encode(',"object":{}}\n')); // [the whole line]
 * ```
 */
export class WatchLineFramer {
  readonly #maxBytes: number;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;

  /** A framer refusing lines longer than `maxBytes`. */
  constructor(maxBytes = maxWatchEventBytes) {
    this.#maxBytes = maxBytes;
  }

  /** Bytes of the unfinished line held now. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  /**
   * The lines `chunk` completes (without their newline). Throws {@linkcode errObjectTooLarge}
   * when a line grows past the limit; the framer is then unusable.
   */
  push(chunk: Uint8Array): Uint8Array[] {
    const lines: Uint8Array[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
      this.#hold(chunk.subarray(start, nl));
      lines.push(this.#take());
      start = nl + 1;
    }
    if (start < chunk.length) this.#hold(chunk.subarray(start));
    return lines;
  }

  /** The unfinished line at the end of the stream, if any. */
  rest(): Uint8Array | undefined {
    return this.#pendingBytes > 0 ? this.#take() : undefined;
  }

  #hold(piece: Uint8Array): void {
    if (this.#pendingBytes + piece.length > this.#maxBytes) {
      this.#pending = [];
      this.#pendingBytes = 0;
      throw new Error(errObjectTooLarge);
    }
    if (piece.length === 0) return;
    this.#pending.push(piece);
    this.#pendingBytes += piece.length;
  }

  #take(): Uint8Array {
    const parts = this.#pending;
    this.#pending = [];
    this.#pendingBytes = 0;
    return concat(parts);
  }
}

// The Status client-go's `NewClientErrorReporter(500, "GET", "ClientWatchDecoding")` reports.
function clientWatchDecodingStatus(message: string): Status {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    code: 500,
    reason: "InternalError",
    message: `an error on the server (${
      goQuote(message)
    }) has prevented the request from succeeding`,
    details: {
      causes: [
        { reason: "UnexpectedServerResponse", message },
        { reason: "ClientWatchDecoding", message },
      ],
    },
  };
}
