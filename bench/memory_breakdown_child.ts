/**
 * The child processes of bench/memory_breakdown.ts: each measures itself and prints one JSON line.
 * Nothing is imported statically (a bare process must stay bare until it is measured).
 *
 *   --child-import FLOOR_JSON MEASURED_JSON   RSS bare, after the floor's imports, after the rest
 *   --child-isolate pool-thread|decode-worker RSS before, with the isolate alive, after it ended
 *   --child-agent ARGS_JSON                   runs the agent; a snapshot per SIGUSR2; SIGTERM ends
 *   --child-cri                               RSS before and after the CRI client's services
 * @module
 */

const mib = (bytes: number) => bytes / 1048576;

function rssMiB(): number {
  const status = Deno.readTextFileSync("/proc/self/status");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024;
}

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  collect?.();
  collect?.();
}

function settle(ms = 200): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `node:` modules every agent loads, loaded before an isolate is measured. */
const nodeFloor = ["node:crypto", "node:net", "node:tls"];

async function childImport(floor: string[], measured: string[]): Promise<void> {
  gc();
  await settle();
  const bare = rssMiB();
  for (const spec of floor) await import(spec);
  gc();
  await settle();
  const before = rssMiB();
  for (const spec of measured) await import(spec);
  gc();
  await settle();
  console.log(JSON.stringify({ bare, before, after: rssMiB() }));
}

async function childIsolate(kind: string): Promise<void> {
  for (const spec of nodeFloor) await import(spec);
  const { ProbePool } = await import("../src/probe/pool/pool.ts");
  const { WorkerDecoder } = await import("../src/kubelet/config/decoder.ts");
  gc();
  await settle(300);
  const before = rssMiB();
  let alive = 0;
  if (kind === "pool-thread") {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const accepting = (async () => {
      for await (const conn of listener) conn.close();
    })();
    const pool = new ProbePool(1, { inlineBelowPerSecond: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    await pool.tcp.probe("127.0.0.1", { port, timeoutMs: 2000 });
    await settle(300);
    alive = rssMiB();
    pool.close();
    listener.close();
    await accepting.catch(() => {});
  } else {
    const decoder = new WorkerDecoder();
    const text = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n" +
      "spec: {containers: [{name: c, image: busybox}]}\n";
    await decoder.decode(new TextEncoder().encode(text), { source: "web.yaml", nodeName: "n" });
    await settle(300);
    alive = rssMiB();
    decoder.close();
  }
  await settle(500);
  gc();
  console.log(JSON.stringify({ before, alive, after: rssMiB() }));
}

/** One snapshot of this process: /proc and V8's view (`node:v8`, loaded by the caller). */
function snapshot(v8: typeof import("node:v8")): Record<string, number> {
  const rollup = Deno.readTextFileSync("/proc/self/smaps_rollup");
  const field = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(rollup)?.[1]) /
    1024;
  const status = Deno.readTextFileSync("/proc/self/status");
  const heap = v8.getHeapStatistics();
  const code = v8.getHeapCodeStatistics();
  const spaceStats = v8.getHeapSpaceStatistics();
  const spaces = Object.fromEntries(spaceStats.map((s) => [s.space_name, mib(s.space_size)]));
  const used = Object.fromEntries(spaceStats.map((s) => [s.space_name, mib(s.space_used_size)]));
  // Resident pages of the deno executable's own mappings, of glibc's malloc heap, of glibc's
  // per-thread arenas (anonymous rw mappings at a 64 MiB boundary followed by their reserved
  // ---p rest up to the next boundary) and of thread stacks (anonymous rw mappings right after a
  // ---p guard page).
  let binary = 0;
  let mallocHeap = 0;
  let arenas = 0;
  let stacks = 0;
  const arenaSize = 64 * 1024 * 1024;
  const maps: { start: number; end: number; perms: string; name: string; rss: number }[] = [];
  for (const line of Deno.readTextFileSync("/proc/self/smaps").split("\n")) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      maps.push({
        start: parseInt(m[1], 16),
        end: parseInt(m[2], 16),
        perms: m[3],
        name: m[4],
        rss: 0,
      });
    } else if (line.startsWith("Rss:")) maps[maps.length - 1].rss = Number(line.split(/\s+/)[1]);
  }
  maps.forEach((map, i) => {
    if (map.name === Deno.execPath()) binary += map.rss;
    else if (map.name === "[heap]") mallocHeap += map.rss;
    else if (map.name === "" && map.perms.startsWith("rw")) {
      const next = maps[i + 1];
      const prev = maps[i - 1];
      if (
        map.start % arenaSize === 0 &&
        (map.end - map.start === arenaSize ||
          (next?.perms.startsWith("---") && next.start === map.end &&
            next.end === map.start + arenaSize))
      ) arenas += map.rss;
      else if (prev?.perms.startsWith("---") && prev.end === map.start) stacks += map.rss;
    }
  });
  // utime + stime of every thread of the process, in clock ticks (USER_HZ = 100 on Linux).
  const stat = Deno.readTextFileSync("/proc/self/stat");
  const times = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return {
    atMs: performance.now(),
    cpuSeconds: (Number(times[11]) + Number(times[12])) / 100,
    rss: field("Rss"),
    anonymous: field("Anonymous"),
    fileBacked: field("Rss") - field("Anonymous"),
    denoBinary: binary / 1024,
    mallocHeap: mallocHeap / 1024,
    mallocArenas: arenas / 1024,
    threadStacks: stacks / 1024,
    threads: Number(/Threads:\s+(\d+)/.exec(status)?.[1]),
    heapCommitted: mib(heap.total_physical_size),
    heapUsed: mib(heap.used_heap_size),
    newSpace: spaces.new_space ?? 0,
    newSpaceUsed: used.new_space ?? 0,
    newLargeObject: spaces.new_large_object_space ?? 0,
    oldSpace: spaces.old_space ?? 0,
    codeSpace: (spaces.code_space ?? 0) + (spaces.code_large_object_space ?? 0),
    codeAndMetadata: mib(code.code_and_metadata_size + code.bytecode_and_metadata_size),
    malloced: mib(heap.malloced_memory),
    external: mib(heap.external_memory),
  };
}

async function childAgent(argsJson: string): Promise<void> {
  const v8 = await import("node:v8");
  const { runKubelet } = await import("../src/cmd/probelet/app.ts");
  const { parseFlags } = await import("../src/cmd/probelet/flags.ts");
  const log = await import("../src/util/log.ts");
  log.setLogSink(() => {});
  const flags = parseFlags(JSON.parse(argsJson));
  const agent = await runKubelet(flags);
  // The parent asks for a snapshot with SIGUSR2 (SIGUSR1 would open Node's inspector) and ends
  // the agent with SIGTERM. No forced GC: a full GC resizes V8's young generation, the figure
  // being measured.
  // With --gc-before-snapshot (MEMORY_BREAKDOWN_GC=1), a full GC first: what is live, not what
  // V8 has not yet collected (it also shrinks the young generation, so it is not the default).
  const collectFirst = Deno.env.get("MEMORY_BREAKDOWN_GC") === "1";
  // With --heap-snapshot-dir, every second SIGUSR2 (the one after the CPU window) also writes a
  // heap snapshot, named by the count of snapshots taken.
  const heapSnapshots = Deno.env.get("MEMORY_BREAKDOWN_HEAP_SNAPSHOTS");
  let signals = 0;
  Deno.addSignalListener("SIGUSR2", () => {
    if (collectFirst) gc();
    const figures = snapshot(v8);
    signals++;
    if (heapSnapshots && signals % 2 === 0) {
      v8.writeHeapSnapshot(`${heapSnapshots}/agent-${signals / 2}.heapsnapshot`);
    }
    console.log(JSON.stringify(figures));
  });
  await new Promise<void>((resolve) => Deno.addSignalListener("SIGTERM", () => resolve()));
  await agent.stop();
  Deno.exit(0);
}

/**
 * RSS before and after the CRI client is imported and its two services are made (the first
 * service made is what loaded and parsed api.proto while the client used @grpc/proto-loader).
 */
async function childCri(): Promise<void> {
  for (const spec of nodeFloor) await import(spec);
  gc();
  await settle();
  const before = rssMiB();
  const cri = await import("../src/cri_client/mod.ts");
  const runtime = new cri.RemoteRuntimeService("unix:///nonexistent/cri.sock");
  const images = new cri.RemoteImageService("unix:///nonexistent/cri.sock");
  gc();
  await settle();
  const after = rssMiB();
  runtime.close();
  images.close();
  console.log(JSON.stringify({ bare: 0, before, after }));
}

const [mode, arg] = Deno.args;
if (mode === "--child-import") await childImport(JSON.parse(arg), JSON.parse(Deno.args[2]));
else if (mode === "--child-isolate") await childIsolate(arg);
else if (mode === "--child-agent") await childAgent(arg);
else if (mode === "--child-cri") await childCri();
else throw new Error(`unknown mode ${mode}`);
