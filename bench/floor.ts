/**
 * The floor for the probe scale benchmark: the same probes (one HTTP/1.1 GET with `Connection:
 * close`, the same over TLS without verification, a bare TCP connect, a grpc.health.v1 Check on a
 * fresh channel) issued by a plain script with Node's own `http`/`https`/`net` and grpc-js, no
 * prober, no workers, no timers per probe beyond what the library needs, at a fixed rate.
 *
 * Usage (run by probe_scale.ts as a subprocess):
 * `deno run --allow-all bench/floor.ts --kind http --rate 1000 --duration 10 --targets '<json>'`.
 * Prints one JSON line: `{ kind, rate, completed, failed, cpuSeconds, cpuPer1000, wallSeconds }`.
 * @module
 */
import http from "node:http";
import https from "node:https";
import net from "node:net";
import process from "node:process";
import { Buffer } from "node:buffer";
import * as grpc from "@grpc/grpc-js";
import { cpuSeconds } from "./proc_stats.ts";

/** The handler kinds the benchmark drives. */
export type TargetKind = "http" | "https" | "tcp" | "grpc";

/** Listening ports of the target process, by kind. */
export type TargetPorts = Record<TargetKind, number[]>;

const HOST = "127.0.0.1";
const USER_AGENT = "kube-probe/1.36";
const MAX_BODY = 10 * 1024;

function httpGet(
  mod: typeof http | typeof https,
  port: number,
  timeoutMs: number,
): Promise<boolean> {
  return new Promise((resolve) => {
    const req = mod.request({
      host: HOST,
      port,
      path: "/healthz",
      method: "GET",
      agent: false,
      rejectUnauthorized: false,
      // No verification, so no trust roots: without this Deno loads the system root store for
      // every TLS connection (the prober does the same).
      ca: [],
      timeout: timeoutMs,
      headers: { "User-Agent": USER_AGENT, "Accept": "*/*", "Connection": "close" },
    }, (res) => {
      let size = 0;
      res.on("data", (chunk: Uint8Array) => {
        size += chunk.length;
        if (size > MAX_BODY) res.destroy();
      });
      res.on("end", () => resolve(res.statusCode! >= 200 && res.statusCode! < 400));
      res.on("error", () => resolve(false));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve(false));
    req.end();
  });
}

/**
 * One plain HTTP GET to 127.0.0.1:`port` (no keep-alive, 10 KiB body cap); true on 2xx/3xx.
 *
 * @example
 * ```ts
 * const ok = await floorHttp(8080, 1000);
 * ```
 */
export function floorHttp(port: number, timeoutMs = 1000): Promise<boolean> {
  return httpGet(http, port, timeoutMs);
}

/**
 * One HTTPS GET without certificate verification; true on 2xx/3xx.
 *
 * @example
 * ```ts
 * const ok = await floorHttps(8443, 1000);
 * ```
 */
export function floorHttps(port: number, timeoutMs = 1000): Promise<boolean> {
  return httpGet(https, port, timeoutMs);
}

/**
 * One TCP connect and close with node:net; true when the connection was established.
 *
 * @example
 * ```ts
 * const ok = await floorTcp(9000, 1000);
 * ```
 */
export function floorTcp(port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: HOST, port, timeout: timeoutMs });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(false));
  });
}

const EMPTY = Buffer.alloc(0);
const identity = (b: Buffer) => b;

/**
 * One grpc.health.v1 Check on a fresh grpc-js channel, closed afterwards; true on SERVING.
 *
 * @example
 * ```ts
 * const ok = await floorGrpc(50051, 1000);
 * ```
 */
export function floorGrpc(port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const client = new grpc.Client(`${HOST}:${port}`, grpc.credentials.createInsecure(), {
      "grpc.primary_user_agent": USER_AGENT,
    });
    client.makeUnaryRequest<Buffer, Buffer>(
      "/grpc.health.v1.Health/Check",
      identity,
      identity,
      EMPTY,
      new grpc.Metadata(),
      { deadline: Date.now() + timeoutMs },
      (err, res) => {
        client.close();
        resolve(!err && res !== undefined && res.length === 2 && res[1] === 1);
      },
    );
  });
}

/** The floor probe function for a kind. */
export const floorProbes: Record<
  TargetKind,
  (port: number, timeoutMs?: number) => Promise<boolean>
> = {
  http: floorHttp,
  https: floorHttps,
  tcp: floorTcp,
  grpc: floorGrpc,
};

/** The result of one floor run. */
export interface FloorResult {
  kind: string;
  /** Probes issued per second. */
  rate: number;
  /** Probes finished in the window (any verdict), and how many of those failed. */
  completed: number;
  failed: number;
  /** Finished probes per second in the window. */
  achievedPerSecond: number;
  /** Probes not issued because `maxInFlight` were still running (a worker's probe overran). */
  skipped: number;
  cpuSeconds: number;
  /** CPU seconds per 1,000 finished probes. */
  cpuPer1000: number;
  /** CPU seconds per wall second (1 = one core). */
  cpuUtilisation: number;
  wallSeconds: number;
}

/**
 * Issues `rate` probes per second of the given kinds (round-robin over kinds and ports) for
 * `durationS` seconds after a one-second warm-up, and measures this process's CPU per 1,000 probes.
 *
 * @example
 * ```ts
 * const r = await runFloor(["tcp"], ports, { rate: 100, durationS: 2 });
 * ```
 */
export async function runFloor(
  kinds: TargetKind[],
  ports: TargetPorts,
  options: { rate: number; durationS: number; warmupS?: number; maxInFlight?: number },
): Promise<FloorResult> {
  const { rate, durationS } = options;
  // Like N workers, at most N probes run at once; the rest of a period's probes are skipped.
  const maxInFlight = options.maxInFlight ?? Math.max(1, Math.ceil(rate));
  let skipped = 0;
  const warmupS = options.warmupS ?? 1;
  let issued = 0;
  let started = 0;
  let completed = 0;
  let failed = 0;
  let inWindow = false;
  let windowCompleted = 0;
  let windowFailed = 0;
  const probeOnce = (i: number) => {
    const kind = kinds[i % kinds.length];
    const list = ports[kind];
    const port = list[Math.floor(i / kinds.length) % list.length];
    if (started - completed - failed >= maxInFlight) {
      if (inWindow) skipped++;
      return;
    }
    started++;
    floorProbes[kind](port, 1000).then((ok) => {
      if (ok) completed++;
      else failed++;
      if (inWindow) {
        if (ok) windowCompleted++;
        else windowFailed++;
      }
    });
  };
  const start = performance.now();
  const tick = setInterval(() => {
    const due = Math.floor((performance.now() - start) / 1000 * rate);
    while (issued < due) probeOnce(issued++);
  }, 5);
  await new Promise((r) => setTimeout(r, warmupS * 1000));
  const cpu0 = cpuSeconds();
  const wall0 = performance.now();
  inWindow = true;
  await new Promise((r) => setTimeout(r, durationS * 1000));
  inWindow = false;
  const cpu = cpuSeconds() - cpu0;
  const wall = (performance.now() - wall0) / 1000;
  clearInterval(tick);
  // Let in-flight probes finish (at most one timeout) before the next job or the exit.
  const drainUntil = performance.now() + 1200;
  while (completed + failed < started && performance.now() < drainUntil) {
    await new Promise((r) => setTimeout(r, 20));
  }
  const finished = windowCompleted + windowFailed;
  return {
    kind: kinds.join("+"),
    rate,
    completed: finished,
    failed: windowFailed,
    achievedPerSecond: finished / wall,
    skipped,
    cpuSeconds: cpu,
    cpuPer1000: finished > 0 ? cpu / finished * 1000 : NaN,
    cpuUtilisation: cpu / wall,
    wallSeconds: wall,
  };
}

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  if (i >= 0) return args[i + 1];
  const eq = args.find((a) => a.startsWith(`--${name}=`));
  return eq?.slice(name.length + 3);
}

if (import.meta.main) {
  const args = Deno.args;
  const ports = JSON.parse(flag(args, "targets") ?? "{}") as TargetPorts;
  const durationS = Number(flag(args, "duration") ?? 10);
  // Either one job (--kind, --rate) or a list (--jobs '[{"kind":"http","rate":100}]'), one JSON
  // line per job.
  const jobs = JSON.parse(
    flag(args, "jobs") ??
      JSON.stringify([{
        kind: flag(args, "kind") ?? "http",
        rate: Number(flag(args, "rate") ?? 100),
      }]),
  ) as { kind: string; rate: number; maxInFlight?: number }[];
  for (const job of jobs) {
    const kinds =
      (job.kind === "mix" ? ["http", "https", "tcp", "grpc"] : [job.kind]) as TargetKind[];
    const result = await runFloor(kinds, ports, {
      rate: job.rate,
      maxInFlight: job.maxInFlight,
      durationS,
      warmupS: Number(flag(args, "warmup") ?? 1),
    });
    result.kind = job.kind;
    console.log(JSON.stringify(result));
  }
  process.exit(0);
}
