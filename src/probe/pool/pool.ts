/**
 * A pool of Deno workers (threads) that run the HTTP, TCP and gRPC probe handlers, so that probe
 * I/O and its garbage use every core while the prober itself (workers, results, events, metrics)
 * stays on the main thread. The pool's `http`, `tcp` and `grpc` are the handler interfaces kubelet's
 * prober calls; a probe's verdict and output are the handler's, whichever thread ran it (the same
 * handler code runs there, on the wall clock).
 *
 * probelet's own addition (kubelet's goroutines are spread over cores by Go's scheduler).
 * @module
 */
import { type HttpProber, newHttpProber } from "../http/http.ts";
import { newTcpProber, type TcpProber } from "../tcp/tcp.ts";
import { type GrpcProber, newGrpcProber } from "../grpc/grpc.ts";
import { type ProbeOutcome, ProbeResult } from "../probe.ts";
import * as log from "../../util/log.ts";
import {
  outcomeFromReply,
  type PoolCall,
  type PoolInit,
  type PoolReply,
  requestToWire,
  type WireRequest,
} from "./protocol.ts";
import type { ProbeRequest } from "../http/request.ts";

/**
 * How much of the inline budget one probe of each kind spends, in plain-HTTP probes. On the main
 * thread an HTTPS probe costs ≈ 0.8 ms of CPU and a gRPC one ≈ 0.4 (http ≈ 0.2, tcp ≈ 0.15): at
 * 1,400 a second they alone would need more than that thread. Counted at their full cost they left
 * it below ~400 a second, where a thread hop costs more than it saves (HTTPS × 700: 1.6 ms per
 * probe on the pool, 1.0 inline); 2 and 1.5 move them past ~750 and ~1,000 a second.
 */
const inlineCost = { http: 1, https: 2, tcp: 1, grpc: 1.5 };

// Distributes over the union so each call kind keeps its own fields.
type CallWithoutId = PoolCall extends infer C ? C extends PoolCall ? Omit<C, "id"> : never
  : never;

interface Thread {
  worker: Worker;
  inFlight: number;
  outbox: PoolCall[];
}

/**
 * Runs network probes on `size` threads.
 *
 * @example
 * ```ts
 * const pool = new ProbePool(navigator.hardwareConcurrency);
 * const prober = newProber(runner, recorder, { pool });
 * // ...
 * pool.close();
 * ```
 */
export class ProbePool {
  /** Number of threads. */
  readonly size: number;
  /** The HTTP handler, run on a pool thread. */
  readonly http: HttpProber;
  /** The TCP handler, run on a pool thread. */
  readonly tcp: TcpProber;
  /** The gRPC handler, run on a pool thread. */
  readonly grpc: GrpcProber;
  #threads: Thread[] = [];
  #pending = new Map<number, { resolve: (o: ProbeOutcome) => void; thread: Thread }>();
  #seq = 0;
  #flushQueued = false;
  #closed = false;
  #init: PoolInit;
  #inlineBelow: number;
  #windowStart = 0;
  #countThisWindow = 0;
  #countLastWindow = 0;
  /** Probes run on the calling thread so far (the rate was below `inlineBelowPerSecond`). */
  inlined = 0;

  /**
   * Starts `size` threads (at least 1); `followNonLocalRedirects` as for `newHttpProber`. While
   * fewer than `inlineBelowPerSecond` probes (default 1,500) were started in the last second, probes
   * run on the calling thread with the same handlers: a thread hop costs 0.07–0.2 ms of CPU per
   * probe, which only pays off once one thread cannot keep up.
   */
  constructor(
    size: number,
    options: { followNonLocalRedirects?: boolean; inlineBelowPerSecond?: number } = {},
  ) {
    this.size = Math.max(1, Math.floor(size));
    const followNonLocalRedirects = options.followNonLocalRedirects ?? false;
    this.#init = { followNonLocalRedirects };
    this.#inlineBelow = options.inlineBelowPerSecond ?? 1500;
    for (let i = 0; i < this.size; i++) this.#threads.push(this.#spawn());
    const local = {
      http: newHttpProber({ followNonLocalRedirects }),
      tcp: newTcpProber(),
      grpc: newGrpcProber(),
    };
    // A worker's request is often the same object probe after probe: flatten it once.
    const wires = new WeakMap<ProbeRequest, WireRequest>();
    this.http = {
      probe: (request, options) => {
        const cost = request.url.scheme === "https" ? inlineCost.https : inlineCost.http;
        if (this.#runInline(cost)) return local.http.probe(request, options);
        let wire = wires.get(request);
        if (!wire) wires.set(request, wire = requestToWire(request));
        return this.#call({ kind: "http", request: wire, timeoutMs: options.timeoutMs });
      },
    };
    this.tcp = {
      probe: (host, options) => {
        if (this.#runInline(inlineCost.tcp)) return local.tcp.probe(host, options);
        return this.#call({ kind: "tcp", host, port: options.port, timeoutMs: options.timeoutMs });
      },
    };
    this.grpc = {
      probe: (host, options) => {
        if (this.#runInline(inlineCost.grpc)) return local.grpc.probe(host, options);
        const { service, port, timeoutMs } = options;
        return this.#call({ kind: "grpc", host, port, service, timeoutMs });
      },
    };
  }

  // Counts this probe (`cost` plain-HTTP probes) in the current one-second window; true when the
  // rate allows running it here.
  #runInline(cost: number): boolean {
    if (this.#closed || this.#inlineBelow <= 0) return false;
    const now = performance.now();
    if (now - this.#windowStart >= 1000) {
      this.#countLastWindow = now - this.#windowStart < 2000 ? this.#countThisWindow : 0;
      this.#windowStart = now;
      this.#countThisWindow = 0;
    }
    this.#countThisWindow += cost;
    const inline = this.#countLastWindow < this.#inlineBelow &&
      this.#countThisWindow <= this.#inlineBelow;
    if (inline) this.inlined++;
    return inline;
  }

  /** Probes in flight on pool threads. */
  get inFlight(): number {
    return this.#pending.size;
  }

  /**
   * Stops every thread. Probes still in flight end as errors (the prober retries or ignores them),
   * and later probes are refused the same way.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const thread of this.#threads) thread.worker.terminate();
    for (const [id, { resolve }] of this.#pending) {
      this.#pending.delete(id);
      resolve({ result: ProbeResult.Unknown, output: "", error: new ProbePoolClosedError() });
    }
  }

  #spawn(): Thread {
    const worker = new Worker(new URL("./pool_worker.ts", import.meta.url).href, {
      type: "module",
    });
    const thread: Thread = { worker, inFlight: 0, outbox: [] };
    worker.postMessage({ init: this.#init });
    worker.onmessage = (event: MessageEvent<PoolReply[]>) => {
      for (const reply of event.data) {
        const pending = this.#pending.get(reply.id);
        if (!pending) continue;
        this.#pending.delete(reply.id);
        thread.inFlight--;
        pending.resolve(outcomeFromReply(reply));
      }
    };
    worker.onerror = (event: ErrorEvent) => {
      event.preventDefault();
      this.#replace(thread, event.message);
    };
    return thread;
  }

  // A thread that died takes its probes with it: they end as errors, and a new thread takes over.
  #replace(thread: Thread, reason: string): void {
    log.error(new Error(reason), "Probe pool thread failed; starting another");
    thread.worker.terminate();
    for (const [id, pending] of this.#pending) {
      if (pending.thread !== thread) continue;
      this.#pending.delete(id);
      pending.resolve(poolError(`probe pool thread failed: ${reason}`));
    }
    const i = this.#threads.indexOf(thread);
    if (i >= 0 && !this.#closed) this.#threads[i] = this.#spawn();
  }

  #call(call: CallWithoutId): Promise<ProbeOutcome> {
    if (this.#closed) {
      return Promise.resolve({
        result: ProbeResult.Unknown,
        output: "",
        error: new ProbePoolClosedError(),
      });
    }
    // The least busy thread; ties go to the first.
    let thread = this.#threads[0];
    for (const t of this.#threads) if (t.inFlight < thread.inFlight) thread = t;
    const id = ++this.#seq;
    thread.inFlight++;
    thread.outbox.push({ ...call, id } as PoolCall);
    this.#scheduleFlush();
    return new Promise((resolve) => this.#pending.set(id, { resolve, thread }));
  }

  // Calls made in one turn of the event loop travel together, one message per thread.
  #scheduleFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(() => {
      this.#flushQueued = false;
      for (const thread of this.#threads) {
        if (thread.outbox.length === 0) continue;
        const batch = thread.outbox;
        thread.outbox = [];
        thread.worker.postMessage(batch);
      }
    });
  }
}

/**
 * The error of a probe cut short, or refused, because the pool was closed: the agent is
 * stopping, so the probe has no verdict (the prober records no event for it).
 */
export class ProbePoolClosedError extends Error {
  constructor() {
    super("probe pool closed");
    this.name = "ProbePoolClosedError";
  }
}

function poolError(message: string): ProbeOutcome {
  return { result: ProbeResult.Unknown, output: "", error: new Error(message) };
}

/**
 * The default number of probe threads: one per core.
 *
 * @example
 * ```ts
 * const pool = new ProbePool(defaultProbeWorkers());
 * ```
 */
export function defaultProbeWorkers(): number {
  return Math.max(1, navigator.hardwareConcurrency || 1);
}
