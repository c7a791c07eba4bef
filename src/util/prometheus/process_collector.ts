/**
 * The process's own figures for `/metrics`, read at each scrape and at no other time: CPU seconds,
 * start time, memory and file descriptors from /proc/self (as Go's process collector, which
 * kubelet's `/metrics` carries, reads them), and the V8 heap and event-loop delay under the
 * `nodejs_*` names the npm prom-client package gave them (the runtime's counterpart of Go's
 * `go_*`). Names, help texts and order are prom-client 15's default metrics, less those Deno
 * cannot measure (active handles, requests and resources, GC durations, the Node.js version).
 *
 * Two figures differ from prom-client's: the CPU counters are the process's since it started (Go's
 * process collector; prom-client counted from its first scrape), and the event-loop delay
 * histogram samples once a second rather than every 10 ms: Deno's sampler wakes the runtime thread
 * at each sample, which at 10 ms cost an idle agent 0.16 CPU-seconds a minute and ~110 wake-ups a
 * second (docs/benchmarks/memory.md, "The idle floor").
 * Mirrors prometheus/client_golang's prometheus/process_collector.go (Linux) and prom-client's
 * lib/metrics (the `nodejs_*` names).
 * @module
 */
import { Counter, Gauge, type Registry } from "./registry.ts";

/** The event-loop delay sampler's period (ms). */
export const eventLoopSampleMs = 1000;

/** Clock ticks a second of /proc/self/stat's times (Linux's USER_HZ, as Go's procfs assumes). */
const userHz = 100;

/** /proc/self/stat's utime and stime, in clock ticks. */
function cpuTicks(): { user: number; system: number } | undefined {
  try {
    const stat = Deno.readTextFileSync("/proc/self/stat");
    // The command name may hold spaces and parentheses: the fields start after its last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { user: Number(fields[11]), system: Number(fields[12]) };
  } catch {
    return undefined;
  }
}

function statusBytes(status: string, field: string): number {
  return Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(status)?.[1]) * 1024;
}

function maxOpenFiles(): number | undefined {
  try {
    const line = Deno.readTextFileSync("/proc/self/limits").split("\n")
      .find((l) => l.startsWith("Max open files"));
    const soft = Number(line?.split(/ {2,}/)[1]);
    return Number.isFinite(soft) ? soft : undefined;
  } catch {
    return undefined;
  }
}

function openFds(): number | undefined {
  try {
    let n = 0;
    for (const _ of Deno.readDirSync("/proc/self/fd")) n++;
    // Less the descriptor the listing itself held.
    return n - 1;
  } catch {
    return undefined;
  }
}

/** One macrotask turn's delay (seconds): how long a ready timer waits for the event loop. */
function eventLoopLag(): Promise<number> {
  const start = performance.now();
  return new Promise((resolve) => setTimeout(() => resolve((performance.now() - start) / 1e3), 0));
}

/**
 * Registers the process metrics in `registry`. `node:v8` and `node:perf_hooks` are loaded here,
 * so call it at the first scrape, not at start (an agent nobody scrapes never loads them).
 *
 * @example
 * ```ts
 * import { Registry } from "./registry.ts";
 *
 * const registry = new Registry();
 * await registerProcessCollectors(registry);
 * await registry.metrics(); // "# HELP process_cpu_user_seconds_total ..."
 * ```
 */
export async function registerProcessCollectors(registry: Registry): Promise<void> {
  const [v8, perfHooks] = await Promise.all([import("node:v8"), import("node:perf_hooks")]);
  const registers = [registry];

  // CPU: one read of /proc/self/stat sets the three counters.
  const cpu = { user: 0, system: 0 };
  const setCpu = (counter: Counter, seconds: number, last: number) => {
    if (seconds > last) counter.inc(seconds - last);
  };
  new Counter({
    name: "process_cpu_user_seconds_total",
    help: "Total user CPU time spent in seconds.",
    registers,
    collect() {
      const ticks = cpuTicks();
      if (!ticks) return;
      const user = ticks.user / userHz;
      const system = ticks.system / userHz;
      setCpu(this, user, cpu.user);
      setCpu(cpuSystem, system, cpu.system);
      setCpu(cpuTotal, user + system, cpu.user + cpu.system);
      cpu.user = Math.max(cpu.user, user);
      cpu.system = Math.max(cpu.system, system);
    },
  });
  const cpuSystem = new Counter({
    name: "process_cpu_system_seconds_total",
    help: "Total system CPU time spent in seconds.",
    registers,
  });
  const cpuTotal = new Counter({
    name: "process_cpu_seconds_total",
    help: "Total user and system CPU time spent in seconds.",
    registers,
  });

  const startSeconds = Math.round(performance.timeOrigin / 1000);
  new Gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since unix epoch in seconds.",
    registers,
    collect() {
      this.set(startSeconds);
    },
  });

  // Memory: one read of /proc/self/status sets the three gauges.
  new Gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
    registers,
    collect() {
      let status: string;
      try {
        status = Deno.readTextFileSync("/proc/self/status");
      } catch {
        return;
      }
      this.set(statusBytes(status, "VmRSS"));
      virtualMemory.set(statusBytes(status, "VmSize"));
      heapMemory.set(statusBytes(status, "VmData"));
    },
  });
  const virtualMemory = new Gauge({
    name: "process_virtual_memory_bytes",
    help: "Virtual memory size in bytes.",
    registers,
  });
  const heapMemory = new Gauge({
    name: "process_heap_bytes",
    help: "Process heap size in bytes.",
    registers,
  });

  new Gauge({
    name: "process_open_fds",
    help: "Number of open file descriptors.",
    registers,
    collect() {
      const n = openFds();
      if (n !== undefined) this.set(n);
    },
  });
  const maxFds = maxOpenFiles();
  if (maxFds !== undefined) {
    new Gauge({
      name: "process_max_fds",
      help: "Maximum number of open file descriptors.",
      registers,
      collect() {
        this.set(maxFds);
      },
    });
  }

  // Event loop: the lag of one timer at the scrape, and the sampler's delays since the last one.
  const delay = perfHooks.monitorEventLoopDelay({ resolution: eventLoopSampleMs });
  delay.enable();
  const lagGauge = (name: string, help: string) => new Gauge({ name, help, registers });
  new Gauge({
    name: "nodejs_eventloop_lag_seconds",
    help: "Lag of event loop in seconds.",
    registers,
    async collect() {
      lagMin.set(delay.min / 1e9);
      lagMax.set(delay.max / 1e9);
      lagMean.set(delay.mean / 1e9);
      lagStddev.set(delay.stddev / 1e9);
      lagP50.set(delay.percentile(50) / 1e9);
      lagP90.set(delay.percentile(90) / 1e9);
      lagP99.set(delay.percentile(99) / 1e9);
      delay.reset();
      this.set(await eventLoopLag());
    },
  });
  const lagMin = lagGauge(
    "nodejs_eventloop_lag_min_seconds",
    "The minimum recorded event loop delay.",
  );
  const lagMax = lagGauge(
    "nodejs_eventloop_lag_max_seconds",
    "The maximum recorded event loop delay.",
  );
  const lagMean = lagGauge(
    "nodejs_eventloop_lag_mean_seconds",
    "The mean of the recorded event loop delays.",
  );
  const lagStddev = lagGauge(
    "nodejs_eventloop_lag_stddev_seconds",
    "The standard deviation of the recorded event loop delays.",
  );
  const lagP50 = lagGauge(
    "nodejs_eventloop_lag_p50_seconds",
    "The 50th percentile of the recorded event loop delays.",
  );
  const lagP90 = lagGauge(
    "nodejs_eventloop_lag_p90_seconds",
    "The 90th percentile of the recorded event loop delays.",
  );
  const lagP99 = lagGauge(
    "nodejs_eventloop_lag_p99_seconds",
    "The 99th percentile of the recorded event loop delays.",
  );

  // The V8 heap: Deno.memoryUsage() for the totals, node:v8 for each space.
  new Gauge({
    name: "nodejs_heap_size_total_bytes",
    help: "Process heap size from Node.js in bytes.",
    registers,
    collect() {
      const usage = Deno.memoryUsage();
      this.set(usage.heapTotal);
      heapUsed.set(usage.heapUsed);
      external.set(usage.external);
    },
  });
  const heapUsed = new Gauge({
    name: "nodejs_heap_size_used_bytes",
    help: "Process heap size used from Node.js in bytes.",
    registers,
  });
  const external = new Gauge({
    name: "nodejs_external_memory_bytes",
    help: "Node.js external memory size in bytes.",
    registers,
  });
  // Each space of the heap: one read of node:v8's statistics sets the three gauges.
  const space = (kind: string, collect?: (this: Gauge<"space">) => void) =>
    new Gauge({
      name: `nodejs_heap_space_size_${kind}_bytes`,
      help: `Process heap space size ${kind} from Node.js in bytes.`,
      labelNames: ["space"],
      registers,
      collect,
    });
  space("total", function () {
    for (const s of v8.getHeapSpaceStatistics()) {
      const labels = { space: s.space_name.slice(0, s.space_name.indexOf("_space")) };
      this.set(labels, s.space_size);
      spaceUsed.set(labels, s.space_used_size);
      spaceAvailable.set(labels, s.space_available_size);
    }
  });
  const spaceUsed = space("used");
  const spaceAvailable = space("available");
}
