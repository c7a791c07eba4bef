/**
 * The container log manager (kubelet's pkg/kubelet/logs/container_log_manager_test.go, the cases
 * that apply) against real files in a temporary folder and a fake runtime that reopens logs the
 * way containerd does (a new empty file at the log path).
 */
import {
  deepStrictEqual as assertEquals,
  ok as assert,
  throws as assertThrows,
} from "node:assert/strict";
import { join } from "node:path";
import type { Container, ContainerStatusResponse } from "../../../src/cri_client/api.ts";
import {
  ContainerLogManager,
  filterUnusedLogs,
  getAllLogs,
  type LogRuntime,
  newContainerLogManager,
} from "../../../src/kubelet/logs/container_log_manager.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { setLogSink } from "../../../src/util/log.ts";

setLogSink(() => {});

interface FakeContainer {
  state: Container["state"];
  logPath: string;
  labels?: Record<string, string>;
}

function fakeRuntime(containers: Record<string, FakeContainer>) {
  const calls: string[] = [];
  let failReopen = false;
  const runtime: LogRuntime = {
    listContainers: (filter) =>
      Promise.resolve(
        Object.entries(containers)
          .filter(([, c]) =>
            Object.entries(filter?.labelSelector ?? {}).every(([k, v]) => c.labels?.[k] === v)
          )
          .map(([id, c]) => ({ id, state: c.state, labels: c.labels ?? {} }) as Container),
      ),
    containerStatus: (id) => {
      const c = containers[id];
      if (!c) return Promise.reject(new Error(`container "${id}" not found`));
      return Promise.resolve({ status: { id, logPath: c.logPath } } as ContainerStatusResponse);
    },
    reopenContainerLog: async (id) => {
      calls.push(`reopen ${id}`);
      if (failReopen) throw new Error("reopen refused");
      await Deno.writeTextFile(containers[id].logPath, "");
    },
  };
  return { runtime, calls, failReopen: (v: boolean) => failReopen = v };
}

async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
}

async function gunzip(path: string): Promise<string> {
  const file = await Deno.open(path);
  const stream = file.readable.pipeThrough(new DecompressionStream("gzip"));
  return await new Response(stream).text();
}

// 2026-11-23 10:00:00 local time, then one second per rotation.
const start = new Date(2026, 10, 23, 10, 0, 0).getTime();

Deno.test("TestRotateLogs: only a running container's log past the size is rotated and reopened", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const big = join(dir, "big.log");
    await Deno.writeTextFile(big, "x".repeat(100));
    await Deno.writeTextFile(join(dir, "small.log"), "x".repeat(10));
    await Deno.writeTextFile(join(dir, "stopped.log"), "x".repeat(100));
    const { runtime, calls } = fakeRuntime({
      big: { state: "CONTAINER_RUNNING", logPath: big },
      small: { state: "CONTAINER_RUNNING", logPath: join(dir, "small.log") },
      stopped: { state: "CONTAINER_EXITED", logPath: join(dir, "stopped.log") },
    });
    const clock = new FakeClock(start);
    const m = new ContainerLogManager({ runtime, clock, maxSizeBytes: 50, maxFiles: 5 });
    m.start();
    await m.flush();
    await m.stop();
    assertEquals(calls, ["reopen big"]);
    assertEquals(await names(dir), [
      "big.log",
      "big.log.20261123-100000",
      "small.log",
      "stopped.log",
    ]);
    assertEquals(await Deno.readTextFile(big), "", "the runtime writes to a new file");
    assertEquals(await Deno.readTextFile(`${big}.20261123-100000`), "x".repeat(100));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestRotateLogs: older rotated files are gzipped, at most maxFiles files are kept", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "0.log");
    const { runtime } = fakeRuntime({ c: { state: "CONTAINER_RUNNING", logPath: path } });
    const clock = new FakeClock(start);
    const m = new ContainerLogManager({ runtime, clock, maxSizeBytes: 5, maxFiles: 3 });
    for (let i = 0; i < 4; i++) {
      await Deno.writeTextFile(path, `round-${i}`);
      await m.processContainer("c");
      await clock.step(1_000);
    }
    // maxFiles 3: the live log, the newest rotated one as it was, one older gzipped.
    assertEquals(await names(dir), ["0.log", "0.log.20261123-100002.gz", "0.log.20261123-100003"]);
    assertEquals(await gunzip(`${path}.20261123-100002.gz`), "round-2");
    assertEquals(await Deno.readTextFile(`${path}.20261123-100003`), "round-3");
    assertEquals(await getAllLogs(path), [
      `${path}.20261123-100002.gz`,
      `${path}.20261123-100003`,
      path,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestRotateLogs: a failed reopen puts the log back, so the next round tries again", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "0.log");
    await Deno.writeTextFile(path, "x".repeat(20));
    const { runtime, calls, failReopen } = fakeRuntime({
      c: { state: "CONTAINER_RUNNING", logPath: path },
    });
    const m = new ContainerLogManager({
      runtime,
      clock: new FakeClock(start),
      maxSizeBytes: 5,
      maxFiles: 3,
    });
    failReopen(true);
    await m.processContainer("c");
    assertEquals(await names(dir), ["0.log"]);
    assertEquals(await Deno.readTextFile(path), "x".repeat(20));
    failReopen(false);
    await m.processContainer("c");
    assertEquals(calls, ["reopen c", "reopen c"]);
    assertEquals(await names(dir), ["0.log", "0.log.20261123-100000"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestRotateLogs: a log renamed away and never reopened is reopened first", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "0.log");
    const { runtime, calls } = fakeRuntime({ c: { state: "CONTAINER_RUNNING", logPath: path } });
    const m = new ContainerLogManager({
      runtime,
      clock: new FakeClock(start),
      maxSizeBytes: 5,
      maxFiles: 3,
    });
    await m.processContainer("c");
    assertEquals(calls, ["reopen c"]);
    assertEquals(await names(dir), ["0.log"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestCleanupUnusedLog: temporary files and files already gzipped are removed at rotation", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "0.log");
    await Deno.writeTextFile(path, "live-log-past-size");
    await Deno.writeTextFile(`${path}.20261123-090000`, "a");
    await Deno.writeTextFile(`${path}.20261123-090000.gz`, "gz");
    await Deno.writeTextFile(`${path}.20261123-090100.tmp`, "t");
    const { runtime } = fakeRuntime({ c: { state: "CONTAINER_RUNNING", logPath: path } });
    const m = new ContainerLogManager({
      runtime,
      clock: new FakeClock(start),
      maxSizeBytes: 5,
      maxFiles: 5,
    });
    await m.processContainer("c");
    assertEquals(await names(dir), ["0.log", "0.log.20261123-090000.gz", "0.log.20261123-100000"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("filterUnusedLogs: kubelet's isInUse", () => {
  assertEquals(filterUnusedLogs(["a.1", "a.1.gz", "a.2", "a.3.tmp", "a.4.gz"]), {
    inuse: ["a.1.gz", "a.2", "a.4.gz"],
    unused: ["a.1", "a.3.tmp"],
  });
});

Deno.test("clean: every log of the container goes, another container's stays", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "0.log");
    for (const f of ["0.log", "0.log.20261123-090000.gz", "0.log.20261123-090100", "1.log"]) {
      await Deno.writeTextFile(join(dir, f), "x");
    }
    const { runtime } = fakeRuntime({ c: { state: "CONTAINER_EXITED", logPath: path } });
    const m = new ContainerLogManager({
      runtime,
      clock: new FakeClock(start),
      maxSizeBytes: 5,
      maxFiles: 5,
    });
    await m.clean("c");
    assertEquals(await names(dir), ["1.log"]);
    await assertRejects(() => m.clean("gone"), /failed to get container status "gone"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("newContainerLogManager: negative size disables rotation; maxFiles must be > 1", () => {
  const { runtime } = fakeRuntime({});
  const clock = new FakeClock(start);
  assertEquals(
    newContainerLogManager({ runtime, clock, maxSizeBytes: -1, maxFiles: 5 }),
    undefined,
  );
  assertThrows(
    () => newContainerLogManager({ runtime, clock, maxSizeBytes: 10, maxFiles: 1 }),
    /invalid MaxFiles 1, must be > 1/,
  );
});

Deno.test("rotateLogs: only containers with the node's labels are rotated", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const f of ["mine.log", "other.log"]) {
      await Deno.writeTextFile(join(dir, f), "x".repeat(9));
    }
    const { runtime, calls } = fakeRuntime({
      mine: {
        state: "CONTAINER_RUNNING",
        logPath: join(dir, "mine.log"),
        labels: { "io.probelet.node": "n1" },
      },
      other: {
        state: "CONTAINER_RUNNING",
        logPath: join(dir, "other.log"),
        labels: { "io.probelet.node": "n2" },
      },
    });
    const clock = new FakeClock(start);
    const m = new ContainerLogManager({
      runtime,
      clock,
      maxSizeBytes: 5,
      maxFiles: 5,
      labelSelector: { "io.probelet.node": "n1" },
    });
    m.start();
    await m.flush();
    assertEquals(calls, ["reopen mine"]);
    // The next check, 10 s later, finds both logs small.
    await clock.step(10_000);
    await m.flush();
    await m.stop();
    assertEquals(calls, ["reopen mine"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

async function assertRejects(fn: () => Promise<unknown>, re: RegExp): Promise<void> {
  try {
    await fn();
  } catch (e) {
    assert(re.test(String(e)), String(e));
    return;
  }
  assert(false, "expected a rejection");
}
