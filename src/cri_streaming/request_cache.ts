/**
 * The streaming server's cache of pending requests: each CRI `Exec`/`Attach`/`PortForward` call
 * stores its request under a random single-use token that the URL handed back carries; the first
 * request to that URL consumes it. Tokens expire after {@linkcode cacheTtlMs}, at most
 * {@linkcode maxInFlight} are pending at once.
 * Mirrors `k8s.io/cri-streaming/pkg/streaming/request_cache.go` and `errors.go`.
 * @module
 */
import { type Clock, RealClock } from "../util/clock.ts";
import { grpcCodeName, GrpcStatus } from "../util/grpc_codes.ts";

/** How long a token stays valid (cri-streaming's `cacheTTL`, 1 minute). */
export const cacheTtlMs = 60_000;
/** Most tokens pending at once (`maxInFlight`). */
export const maxInFlight = 1000;
/** Characters of a token (`tokenLen`): 6 random bytes in base64url. */
export const tokenLen = 8;

/**
 * An error carrying a gRPC status code, worded as grpc-go's `status.Error`:
 * `rpc error: code = ResourceExhausted desc = ...`.
 */
export class StreamingError extends Error {
  /** The gRPC status code (`GrpcStatus`). */
  readonly code: number;
  /** The description without the `rpc error` prefix. */
  readonly desc: string;
  /** Builds the error from a code and its description. */
  constructor(code: number, desc: string) {
    super(`rpc error: code = ${grpcCodeName(code)} desc = ${desc}`);
    this.name = "StreamingError";
    this.code = code;
    this.desc = desc;
  }
}

/** cri-streaming's `NewErrorTooManyInFlight`. */
export function newErrorTooManyInFlight(): StreamingError {
  return new StreamingError(
    GrpcStatus.ResourceExhausted,
    "maximum number of in-flight requests exceeded",
  );
}

interface CacheEntry<T> {
  token: string;
  req: T;
  expireTime: number;
}

/**
 * Single-use tokens for pending requests, oldest first.
 *
 * @example
 * ```ts
 * const cache = new RequestCache<string>();
 * const token = cache.insert("exec request");
 * cache.consume(token); // "exec request"
 * cache.consume(token); // undefined: used
 * ```
 */
export class RequestCache<T> {
  #clock: Clock;
  // Insertion order is expiry order: a Map iterates oldest first.
  #tokens = new Map<string, CacheEntry<T>>();
  #random: (bytes: Uint8Array) => void;

  /** `random` fills a byte array (tests make collisions with it). */
  constructor(options: { clock?: Clock; random?: (bytes: Uint8Array) => void } = {}) {
    this.#clock = options.clock ?? new RealClock();
    this.#random = options.random ?? ((b) => crypto.getRandomValues(b));
  }

  /** Pending tokens (expired ones included until the next insert). */
  get size(): number {
    return this.#tokens.size;
  }

  /** Stores `req` and returns its new token; throws {@linkcode StreamingError} when full. */
  insert(req: T): string {
    this.#gc();
    if (this.#tokens.size >= maxInFlight) throw newErrorTooManyInFlight();
    const token = this.#uniqueToken();
    this.#tokens.set(token, { token, req, expireTime: this.#clock.now() + cacheTtlMs });
    return token;
  }

  /** The request stored under `token`, removing it; `undefined` when unknown or expired. */
  consume(token: string): T | undefined {
    const entry = this.#tokens.get(token);
    if (!entry) return undefined;
    this.#tokens.delete(token);
    if (this.#clock.now() > entry.expireTime) return undefined;
    return entry.req;
  }

  #uniqueToken(): string {
    const raw = new Uint8Array(Math.ceil(tokenLen * 6 / 8));
    for (let i = 0; i < 10; i++) {
      this.#random(raw);
      const token = base64Url(raw).slice(0, tokenLen);
      if (!this.#tokens.has(token)) return token;
    }
    throw new Error("failed to generate unique token");
  }

  #gc(): void {
    const now = this.#clock.now();
    for (const [token, entry] of this.#tokens) {
      if (!(now > entry.expireTime)) return;
      this.#tokens.delete(token);
    }
  }
}

function base64Url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}
