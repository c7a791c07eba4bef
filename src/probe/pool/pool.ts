/**
 * A pool of Deno workers (threads) that run the HTTP, TCP and gRPC probe handlers, so that probe
 * I/O and its garbage use every core while the prober itself (workers, results, events, metrics)
 * stays on the main thread. The pool's `http`, `tcp` and `grpc` are the handler interfaces kubelet's
 * prober calls; a probe's verdict and output are the handler's, whichever thread ran it (the same
 * handler code runs there, on the wall clock).
 *
 * The pool has a deadline of its own: a probe that has not answered by its timeout plus
 * `deadlineGraceMs` is a Failure with kubelet's timeout text, whichever thread ran it, so that a
 * handler stuck on I/O (a peer that stops reading, issue 21) cannot stop a probe worker for good.
 * A pool thread that overran is replaced, and terminated once its other probes are answered or
 * overran too: terminating it releases every socket it held.
 *
 * probelet's own addition (kubelet's goroutines are spread over cores by Go's scheduler).
 * @module
 */
import {
  type HttpProber,
  newHttpProber,
  stripPassword,
  timeoutAwaitingHeaders,
} from "../http/http.ts";
import { dialErrorText, joinHostPort, newTcpProber, type TcpProber } from "../tcp/tcp.ts";
import { type GrpcProber, newGrpcProber } from "../grpc/grpc.ts";
import { type ProbeOutcome, ProbeResult } from "../probe.ts";
import { type Clock, type ClockTimer, RealClock } from "../../util/clock.ts";
import { goDuration, goQuote } from "../../util/go_format.ts";
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
  /** Replaced after a probe overran on it: takes no new calls, ends when its last one does. */
  draining: boolean;
}

interface Pending {
  resolve: (o: ProbeOutcome) => void;
  thread: Thread;
  /** The pool's deadline for the call (its timeout plus the grace). */
  timer?: ClockTimer;
}

/**
 * How long past its timeout a probe may take before the pool fails it (see the module doc). The
 * handlers end their own I/O at the timeout; this is a backstop, and must not pre-empt a handler
 * that is merely late: a thread loads grpc-js on its first gRPC probe, which took over a second on
 * a loaded machine (the pool's tests then saw the pool's text instead of the handler's).
 */
export const defaultDeadlineGraceMs = 5_000;

/**
 * Runs network probes on `size` threads.
 *
 * @example
 * ```ts
 * import { newProber } from "../../kubelet/prober/prober.ts";
 * import type { CommandRunner } from "../../kubelet/container/command_runner.ts";
 * import type { EventRecorder } from "../../kubelet/events/event.ts";
 *
 * declare const runner: CommandRunner;
 * declare const recorder: EventRecorder;
 *
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
  #pending = new Map<number, Pending>();
  #clock: Clock;
  #deadlineGraceMs: number;
  #workerModule: URL;
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
  /** Probes failed by the pool's own deadline (they did not answer in time). */
  overran = 0;
  /** Pool threads replaced because a probe overran on them. */
  recycled = 0;

  /**
   * Starts `size` threads (at least 1); `followNonLocalRedirects` as for `newHttpProber`. While
   * fewer than `inlineBelowPerSecond` probes (default 1,500) were started in the last second, probes
   * run on the calling thread with the same handlers: a thread hop costs 0.07–0.2 ms of CPU per
   * probe, which only pays off once one thread cannot keep up. `deadlineGraceMs` (default 5 s)
   * and `clock` (default: the wall clock) time the pool's own deadline; `workerModule` replaces
   * the threads' entry point (tests).
   */
  constructor(
    size: number,
    options: {
      followNonLocalRedirects?: boolean;
      inlineBelowPerSecond?: number;
      deadlineGraceMs?: number;
      clock?: Clock;
      workerModule?: URL;
    } = {},
  ) {
    this.size = Math.max(1, Math.floor(size));
    this.#clock = options.clock ?? new RealClock();
    this.#deadlineGraceMs = options.deadlineGraceMs ?? defaultDeadlineGraceMs;
    this.#workerModule = options.workerModule ?? new URL("./pool_worker.ts", import.meta.url);
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
        // Go's url.Error for a client timeout, built only when the deadline passes.
        const overran = () =>
          `Get ${goQuote(stripPassword(request.url))}: ${timeoutAwaitingHeaders}`;
        if (this.#runInline(cost)) {
          return this.#inline(local.http.probe(request, options), options.timeoutMs, overran);
        }
        let wire = wires.get(request);
        if (!wire) wires.set(request, wire = requestToWire(request));
        return this.#call({ kind: "http", request: wire, timeoutMs: options.timeoutMs }, overran);
      },
    };
    this.tcp = {
      probe: (host, options) => {
        const overran = () =>
          dialErrorText(joinHostPort(host, options.port), host, undefined, true);
        if (this.#runInline(inlineCost.tcp)) {
          return this.#inline(local.tcp.probe(host, options), options.timeoutMs, overran);
        }
        const { port, timeoutMs } = options;
        return this.#call({ kind: "tcp", host, port, timeoutMs }, overran);
      },
    };
    this.grpc = {
      probe: (host, options) => {
        const { service, port, timeoutMs } = options;
        const overran = () =>
          `timeout: health rpc did not complete within ${goDuration(timeoutMs)}`;
        if (this.#runInline(inlineCost.grpc)) {
          return this.#inline(local.grpc.probe(host, options), timeoutMs, overran);
        }
        return this.#call({ kind: "grpc", host, port, service, timeoutMs }, overran);
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
    const threads = new Set([
      ...this.#threads,
      ...[...this.#pending.values()].map((p) => p.thread),
    ]);
    for (const thread of threads) thread.worker.terminate();
    for (const [id, { resolve, timer }] of this.#pending) {
      this.#pending.delete(id);
      timer?.stop();
      resolve({ result: ProbeResult.Unknown, output: "", error: new ProbePoolClosedError() });
    }
  }

  // A probe run on this thread: its verdict is a Failure at the pool's deadline if it has not
  // answered by then (its I/O cannot be reclaimed here; util/socket.ts ends it at its own).
  #inline(
    outcome: Promise<ProbeOutcome>,
    timeoutMs: number,
    overranText: () => string,
  ): Promise<ProbeOutcome> {
    if (timeoutMs <= 0) return outcome;
    return new Promise((resolve) => {
      const timer = this.#clock.afterFunc(timeoutMs + this.#deadlineGraceMs, () => {
        this.overran++;
        log.info("Probe did not answer by its deadline; failing it", {
          timeout: goDuration(timeoutMs),
        });
        resolve({ result: ProbeResult.Failure, output: overranText() });
      });
      outcome.then((o) => {
        if (timer.stop()) resolve(o);
      });
    });
  }

  // The pool's deadline passed for call `id`: it fails with kubelet's timeout text, and its thread
  // is replaced and ended once nothing else runs on it.
  #overrun(id: number, timeoutMs: number, overranText: () => string): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    this.overran++;
    const { thread } = pending;
    thread.inFlight--;
    if (!thread.draining && !this.#closed) {
      thread.draining = true;
      this.recycled++;
      // Its outbox is empty: calls are posted in the turn they are made, long before a deadline.
      const i = this.#threads.indexOf(thread);
      if (i >= 0) this.#threads[i] = this.#spawn();
      log.info("Probe did not answer by its deadline; replacing its pool thread", {
        timeout: goDuration(timeoutMs),
      });
    }
    this.#endIfDrained(thread);
    pending.resolve({ result: ProbeResult.Failure, output: overranText() });
  }

  #endIfDrained(thread: Thread): void {
    if (thread.draining && thread.inFlight <= 0) thread.worker.terminate();
  }

  #spawn(): Thread {
    const worker = new Worker(this.#workerModule.href, { type: "module" });
    const thread: Thread = { worker, inFlight: 0, outbox: [], draining: false };
    worker.postMessage({ init: this.#init });
    worker.onmessage = (event: MessageEvent<PoolReply[]>) => {
      for (const reply of event.data) {
        const pending = this.#pending.get(reply.id);
        if (!pending) continue;
        this.#pending.delete(reply.id);
        pending.timer?.stop();
        thread.inFlight--;
        pending.resolve(outcomeFromReply(reply));
      }
      this.#endIfDrained(thread);
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
      pending.timer?.stop();
      pending.resolve(poolError(`probe pool thread failed: ${reason}`));
    }
    if (thread.draining) return;
    const i = this.#threads.indexOf(thread);
    if (i >= 0 && !this.#closed) this.#threads[i] = this.#spawn();
  }

  #call(call: CallWithoutId, overranText: () => string): Promise<ProbeOutcome> {
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
    return new Promise((resolve) => {
      const pending: Pending = { resolve, thread };
      if (call.timeoutMs > 0) {
        pending.timer = this.#clock.afterFunc(
          call.timeoutMs + this.#deadlineGraceMs,
          () => this.#overrun(id, call.timeoutMs, overranText),
        );
      }
      this.#pending.set(id, pending);
    });
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
