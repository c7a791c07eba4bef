/**
 * What decoding one PLEG relist's CRI answers costs the CRI client: a `ListContainers` and a
 * `ListPodSandbox` answer of `--n` entries (200 by default), labelled and annotated as kubelet
 * labels and annotates its containers and sandboxes, decoded into the CRI client's types
 * (src/cri_client/api.ts) exactly as `listContainers()` / `listPodSandbox()` do.
 *
 * Figures, each printed with the 1-minute load average:
 * - bytes allocated per decode: V8's young generation (new space and new large-object space)
 *   before and after `--iterations` decodes, made large enough that no GC runs in between
 *   (`--min-semi-space-size`), so the difference is what the decodes allocated (checked: it only
 *   grows);
 * - bytes retained: the decoded list's live size after a full GC (what a relist keeps; ten lists
 *   held, divided by ten);
 * - time per decode: the median of `--rounds` rounds of `--iterations` decodes, wall clock (noisy
 *   under load; read it with the load average) and CPU time of the process (user + system, less
 *   so).
 *
 *   deno run -A --v8-flags=--expose-gc,--min-semi-space-size=64,--max-semi-space-size=64 \
 *     bench/cri_decode.ts [--n 200] [--iterations 50] [--rounds 15]
 *
 * The fixture is encoded by protobufjs (@grpc/proto-loader on proto/runtime/v1/api.proto), the
 * reference encoder the client's codec is tested against.
 * @module
 */
import * as protoLoader from "@grpc/proto-loader";
import { getHeapSpaceStatistics, getHeapStatistics } from "node:v8";
import { fileURLToPath } from "node:url";
import { cpuUsage } from "node:process";
import { RuntimeServiceMethods } from "../src/cri_client/codec_gen.ts";

function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}
const n = flag("n", 200);
const iterations = flag("iterations", 50);
const rounds = flag("rounds", 15);

const gc = (globalThis as { gc?: () => void }).gc ??
  (() => {
    throw new Error("run with --v8-flags=--expose-gc");
  });

function load1(): string {
  return Deno.readTextFileSync("/proc/loadavg").split(" ")[0];
}

const definition = protoLoader.loadSync(
  fileURLToPath(new URL("../proto/runtime/v1/api.proto", import.meta.url)),
  { keepCase: false, longs: String, enums: String, defaults: true, arrays: true, objects: true },
);
const runtimeService = definition["runtime.v1.RuntimeService"] as unknown as Record<
  string,
  { responseSerialize(value: unknown): Uint8Array }
>;

/**
 * The client's path: the generated codec straight into the client's types. (Until commit
 * a7c983c it was proto-loader's `responseDeserialize` and then convert.ts's `containerFromProto`
 * / `podSandboxFromProto`; that commit's run of this script gives the figures before.)
 */
function decodeListContainers(bytes: Uint8Array): unknown[] {
  return RuntimeServiceMethods.ListContainers.decode(bytes).containers;
}

function decodeListPodSandbox(bytes: Uint8Array): unknown[] {
  return RuntimeServiceMethods.ListPodSandbox.decode(bytes).items;
}

const uid = (i: number) => `5d0f1c2e-7b3a-4c1d-9e8f-${String(i).padStart(12, "0")}`;

/** `n` containers as kubelet labels and annotates them (kuberuntime's labels.go). */
function containersAnswer(count: number) {
  return {
    containers: Array.from({ length: count }, (_, i) => ({
      id: (i.toString(16) + "a1b2c3d4e5f6").repeat(6).slice(0, 64),
      podSandboxId: (i.toString(16) + "f6e5d4c3b2a1").repeat(6).slice(0, 64),
      metadata: { name: "app", attempt: i % 3 },
      image: { image: "sha256:" + "ab".repeat(32) },
      imageRef: "sha256:" + "ab".repeat(32),
      state: i % 10 === 0 ? "CONTAINER_EXITED" : "CONTAINER_RUNNING",
      createdAt: String(1_764_230_400_000_000_000n + BigInt(i)),
      labels: {
        "io.kubernetes.container.name": "app",
        "io.kubernetes.pod.name": `web-${i}`,
        "io.kubernetes.pod.namespace": "default",
        "io.kubernetes.pod.uid": uid(i),
      },
      annotations: {
        "io.kubernetes.container.hash": "3f6a1c2b",
        "io.kubernetes.container.restartCount": String(i % 3),
        "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
        "io.kubernetes.container.terminationMessagePolicy": "File",
        "io.kubernetes.pod.terminationGracePeriod": "30",
        "io.kubernetes.container.ports": '[{"name":"http","containerPort":8080,"protocol":"TCP"}]',
      },
      imageId: "sha256:" + "ab".repeat(32),
    })),
  };
}

/** `n` sandboxes as kubelet labels and annotates them (kuberuntime_sandbox.go). */
function sandboxesAnswer(count: number) {
  return {
    items: Array.from({ length: count }, (_, i) => ({
      id: (i.toString(16) + "f6e5d4c3b2a1").repeat(6).slice(0, 64),
      metadata: { name: `web-${i}`, uid: uid(i), namespace: "default", attempt: 0 },
      state: "SANDBOX_READY",
      createdAt: String(1_764_230_400_000_000_000n + BigInt(i)),
      labels: {
        app: "web",
        "io.kubernetes.pod.name": `web-${i}`,
        "io.kubernetes.pod.namespace": "default",
        "io.kubernetes.pod.uid": uid(i),
      },
      annotations: {
        "kubernetes.io/config.seen": "2026-11-27T10:00:00.000000000Z",
        "kubernetes.io/config.source": "api",
      },
      runtimeHandler: "",
    })),
  };
}

/** A plain Uint8Array, as the HTTP/2 client hands a message over (protobufjs gives a Buffer). */
function plain(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes);
}

const cases: { name: string; bytes: Uint8Array; decode: (bytes: Uint8Array) => unknown[] }[] = [
  {
    name: `ListContainers, ${n} containers`,
    bytes: plain(runtimeService.ListContainers.responseSerialize(containersAnswer(n))),
    decode: decodeListContainers,
  },
  {
    name: `ListPodSandbox, ${n} sandboxes`,
    bytes: plain(runtimeService.ListPodSandbox.responseSerialize(sandboxesAnswer(n))),
    decode: decodeListPodSandbox,
  },
];

function usedHeap(): number {
  return getHeapStatistics().used_heap_size;
}

/** Bytes in the young generation, where a decode's objects are born (large ones included). */
function usedYoung(): number {
  let used = 0;
  for (const space of getHeapSpaceStatistics()) {
    if (space.space_name === "new_space" || space.space_name === "new_large_object_space") {
      used += space.space_used_size;
    }
  }
  return used;
}

console.log(
  `| answer | bytes on the wire | allocated per decode (KiB) | retained (KiB) | µs per decode (median) | CPU µs per decode (median) | load 1m |`,
);
console.log(`|---|--:|--:|--:|--:|--:|--:|`);
for (const c of cases) {
  // Warm up: compiled code, not the interpreter, is measured.
  for (let i = 0; i < 200; i++) c.decode(c.bytes);
  if (c.decode(c.bytes).length !== n) throw new Error(`${c.name}: decoded the wrong length`);

  const allocated: number[] = [];
  for (let r = 0; r < 5; r++) {
    gc();
    const before = usedYoung();
    let last = before;
    let monotonic = true;
    const keep: unknown[] = [];
    for (let i = 0; i < iterations; i++) {
      keep.push(c.decode(c.bytes));
      const now = usedYoung();
      if (now < last) monotonic = false;
      last = now;
    }
    if (monotonic) allocated.push((last - before) / iterations);
    keep.length = 0;
  }
  if (allocated.length === 0) throw new Error("a GC ran in every round: raise the semi-space");

  gc();
  gc();
  const base = usedHeap();
  let held: unknown = Array.from({ length: 10 }, () => c.decode(c.bytes));
  gc();
  gc();
  const retained = (usedHeap() - base) / 10;
  held = undefined;

  const times: number[] = [];
  const cpuTimes: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const start = performance.now();
    const cpu = cpuUsage();
    for (let i = 0; i < iterations; i++) held = c.decode(c.bytes);
    const used = cpuUsage(cpu);
    times.push((performance.now() - start) / iterations * 1000);
    cpuTimes.push((used.user + used.system) / iterations);
  }
  times.sort((a, b) => a - b);
  const median = (values: number[]) => values.toSorted((a, b) => a - b)[values.length >> 1];
  console.log(
    `| ${c.name} | ${c.bytes.length} | ${(median(allocated) / 1024).toFixed(0)} | ${
      (retained / 1024).toFixed(0)
    } | ${times[times.length >> 1].toFixed(0)} | ${median(cpuTimes).toFixed(0)} | ${load1()} |`,
  );
  void held;
}
