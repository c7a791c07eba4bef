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
import { goArch, goOS } from "../util/go_format.ts";
import { kubernetesVersion } from "../version.ts";
import { V } from "../util/log.ts";
import { StatusError } from "./errors.ts";
import type { Watch } from "./kubernetes/clientset.ts";

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
    const text = await res.text();
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
      await this.#limiter.wait({ signal: req.signal });
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
      const url = this.url(req.path, req.query);
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
          await this.#clock.sleep(1000, { signal: req.signal });
          continue;
        }
        throw failure;
      }
      if (res.ok) {
        // The timeout covers reading the body too; it stops when the caller is done with it.
        if (timer) return withTimerStopped(res, timer);
        return res;
      }
      const body = await res.text().catch(() => "");
      timer?.stop();
      const retryAfter = retryAfterSeconds(res);
      if (
        retryAfter !== undefined && (res.status === 429 || res.status >= 500) &&
        attempt < this.#maxRetries
      ) {
        V(4).info("Got a Retry-After response", {
          method: req.method,
          path: req.path,
          code: res.status,
          retryAfter,
          attempt: attempt + 1,
        });
        await this.#clock.sleep(retryAfter * 1000, { signal: req.signal });
        continue;
      }
      throw statusErrorFromResponse(req, res, body, retryAfter);
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

function retryAfterSeconds(res: Response): number | undefined {
  const header = res.headers.get("Retry-After");
  if (header === null) return undefined;
  const seconds = Number(header);
  return Number.isInteger(seconds) && seconds >= 0 ? seconds : undefined;
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

  /** Yields each event; `ERROR` events carry a `Status`. */
  async *[Symbol.asyncIterator](): AsyncGenerator<WatchEvent<T>> {
    const body = this.#res.body;
    if (!body || this.#ending) {
      this.#finish("server-closed");
      return;
    }
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let broken = false;
    try {
      for (;;) {
        let chunk: ReadableStreamReadResult<string>;
        try {
          chunk = await reader.read();
        } catch (err) {
          if (this.#ending) break;
          broken = true;
          throw new Error(`watch ${this.#what}: ${(err as Error).message}`, { cause: err });
        }
        if (chunk.done) break;
        this.#armIdle();
        buffer += chunk.value;
        // Scan by position and cut the buffer once per chunk (no copy per line).
        let from = 0;
        let newline: number;
        while (!this.#ending && (newline = buffer.indexOf("\n", from)) >= 0) {
          const line = buffer.slice(from, newline).trim();
          from = newline + 1;
          if (line) yield this.#decode(line);
        }
        buffer = buffer.slice(from);
        if (this.#ending) break;
      }
      if (!this.#ending && buffer.trim()) yield this.#decode(buffer.trim());
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

  #decode(line: string): WatchEvent<T> {
    let event: WatchEvent<T>;
    try {
      event = JSON.parse(line);
    } catch (err) {
      this.#end("stopped");
      throw new Error(`watch ${this.#what}: undecodable event: ${(err as Error).message}`);
    }
    if (!event || typeof event.type !== "string" || !("object" in event)) {
      this.#end("stopped");
      throw new Error(`watch ${this.#what}: not a watch event: ${line.slice(0, 200)}`);
    }
    return event;
  }
}
