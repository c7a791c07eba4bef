/**
 * Restarting the agent does not restart its pods, through the real CLI: pods running → agent
 * stopped (SIGTERM) → containers still running on the runtime → agent started again → the same
 * container IDs, restart counts and start times in `/pods`, Ready again without a restart, and no
 * Killing/Created/Started events for them. Also on containerd: two agents (two node names) leave
 * each other's pods alone, and a crash-looping container leaves at most one dead instance.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { runKubelet } from "../../src/cmd/probelet/app.ts";
import { isSameProcess, killRecordedGroups } from "../../src/runtime/embedded/mod.ts";
import { readJson } from "../../src/runtime/embedded/records.ts";
import { probeletNodeLabel } from "../../src/kubelet/kuberuntime/labels.ts";
import * as log from "../../src/util/log.ts";
import {
  connectRuntime,
  criEndpoint,
  integrationSkipReason,
  testImage,
} from "../integration/helpers.ts";
import { type CliProcess, startCli, waitFor } from "./helpers.ts";

const skipReason = await integrationSkipReason();
if (skipReason) console.error(`restart_test (containerd): skipped: ${skipReason}`);

// deno-lint-ignore no-explicit-any
type Json = any;

type Cli = CliProcess<string>;

// The body as JSON; undefined while the agent is still starting (503 "starting").
async function getJson(port: number, path: string): Promise<Json> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  if (!res.ok) {
    await res.body?.cancel();
    return undefined;
  }
  return await res.json();
}

function containerOf(pods: Json, pod: string, container: string): Json {
  const p = pods?.items.find((x: Json) => x.metadata.name === pod);
  return p?.status?.containerStatuses?.find((c: Json) => c.name === container);
}

async function stopCli(cli: Cli | undefined, signal: Deno.Signal = "SIGTERM") {
  if (!cli) return { code: -1, log: "" };
  try {
    cli.child.kill(signal);
  } catch {
    // Already exited.
  }
  const status = await cli.child.status;
  return { code: status.code, log: await cli.stderr };
}

// A container that crashes once on its first start (a marker in a folder its restarts share: the
// pod's /dev/shm under containerd, a test folder on the host), so the restart count to keep is 1,
// then idles; ready while the marker is there.
function restartManifest(markerDir: string, image: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: ${image}
    command: ["sh", "-c"]
    args:
    - |
      if [ -e ${markerDir}/crashed-once ]; then exec sleep 3600; fi
      touch ${markerDir}/crashed-once
      exit 1
    readinessProbe:
      exec: { command: [test, -e, ${markerDir}/crashed-once] }
      periodSeconds: 1
    livenessProbe:
      exec: { command: [test, -e, ${markerDir}/crashed-once] }
      periodSeconds: 2
`;
}

// PIDs of host processes whose command line mentions `text` (the embedded runtime's containers).
async function processesMentioning(text: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name) || Number(entry.name) === Deno.pid) continue;
    try {
      if ((await Deno.readTextFile(`/proc/${entry.name}/cmdline`)).includes(text)) {
        pids.push(Number(entry.name));
      }
    } catch {
      // Exited meanwhile.
    }
  }
  return pids;
}

// The embedded runtime leaves its containers running under their shims (with
// --stop-pods-on-exit=false) and adopts them, as containerd does.
for (const runtimeName of ["containerd", "embedded"] as const) {
  // The embedded runtime needs neither root nor containerd.
  const skip = runtimeName === "containerd" ? skipReason : undefined;
  Deno.test({
    name: `agent restart through the CLI (${runtimeName}): pods keep running and are adopted`,
    ignore: skip !== undefined,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      const base = await Deno.makeTempDir({ prefix: "probelet-restart-" });
      const node = `restart-${crypto.randomUUID().slice(0, 8)}`;
      const markerDir = runtimeName === "containerd" ? "/dev/shm" : join(base, "shared");
      if (runtimeName === "embedded") await Deno.mkdir(markerDir);
      await Deno.mkdir(join(base, "pods"));
      await Deno.writeTextFile(
        join(base, "pods", "web.yaml"),
        restartManifest(markerDir, runtimeName === "containerd" ? testImage : "busybox"),
      );
      const args = [
        ...(runtimeName === "containerd"
          ? ["--container-runtime-endpoint", criEndpoint()]
          : ["--stop-pods-on-exit=false"]),
        "--pod-manifest-path",
        join(base, "pods"),
        "--root-dir",
        join(base, "root"),
        "--node-name",
        node,
      ];
      const runtime = runtimeName === "containerd" ? await connectRuntime() : undefined;
      const stillRunning = async (id: string): Promise<boolean> => {
        if (!runtime) {
          // The embedded runtime's record of the container's process (after `exec sleep` its
          // command line no longer names the marker).
          const state = readJson<{ pid: number; pidStartTime: number }>(
            join(base, "root", "embedded", "containers", id, "state.json"),
          );
          return !!state && !(state instanceof Error) &&
            isSameProcess(state.pid, state.pidStartTime);
        }
        const listed = await runtime.listContainers({
          labelSelector: { [probeletNodeLabel]: node },
        });
        return listed.some((c) => c.id === id && c.state === "CONTAINER_RUNNING");
      };
      let cli: Cli | undefined;
      try {
        cli = await startCli(args);
        const port1 = cli.port;
        const before = await waitFor("web ready after one restart", async () => {
          const pods = await getJson(port1, "/pods");
          const c = containerOf(pods, `web-${node}`, "web");
          return c?.ready === true && c.restartCount === 1 && { pods, c };
        }, { timeoutMs: 30_000 });
        const startTime = before.pods.items[0].status.startTime;

        // SIGTERM: the agent leaves its pods running.
        const first = await stopCli(cli);
        cli = undefined;
        assertEquals(first.code, 0, first.log);
        const id = before.c.containerID.replace(/^[a-z]+:\/\//, "");
        assert(await stillRunning(id), "the container outlives the agent");

        // Started again (this time stopping the pods on exit, to clean up): the pod is adopted.
        cli = await startCli([
          ...args.filter((a) => !a.startsWith("--stop-pods-on-exit")),
          "--stop-pods-on-exit",
        ]);
        const port2 = cli.port;
        const adopted = await waitFor("web listed again", async () => {
          const c = containerOf(await getJson(port2, "/pods"), `web-${node}`, "web");
          return c?.state?.running && c;
        });
        assertEquals(adopted.containerID, before.c.containerID);
        assertEquals(adopted.restartCount, 1);
        assertEquals(adopted.state.running.startedAt, before.c.state.running.startedAt);
        const ready = await waitFor("web Ready again", async () => {
          const pods = await getJson(port2, "/pods");
          const c = containerOf(pods, `web-${node}`, "web");
          return c?.ready === true && { pods, c };
        });
        assertEquals(ready.c.containerID, before.c.containerID);
        assertEquals(ready.c.restartCount, 1);
        // The first agent recorded the pod's start time on its sandbox; the second reports it.
        assertEquals(ready.pods.items[0].status.startTime, startTime);
        const uid = ready.pods.items[0].metadata.uid;
        const events = await getJson(port2, `/events?podUID=${uid}`);
        assertEquals(
          events.items.filter((e: Json) => ["Killing", "Created", "Started"].includes(e.reason)),
          [],
        );

        // --stop-pods-on-exit: this time SIGTERM stops and removes the pod.
        const second = await stopCli(cli);
        cli = undefined;
        assertEquals(second.code, 0, second.log);
        assert(second.log.includes("Pod terminated and removed"), second.log);
        assertEquals(await stillRunning(id), false);
      } finally {
        await stopCli(cli, "SIGKILL");
        if (runtime) {
          await removeNodeObjects(node);
          runtime.close();
        } else {
          for (const pid of await processesMentioning(`${markerDir}/crashed-once`)) {
            try {
              Deno.kill(pid, "SIGKILL");
            } catch {
              // Exited meanwhile.
            }
          }
          killRecordedGroups(join(base, "root", "embedded"));
        }
        await Deno.remove(base, { recursive: true });
      }
    },
  });
}

Deno.test({
  name: "two agents on one containerd leave each other's pods alone",
  ignore: skipReason !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const base = await Deno.makeTempDir({ prefix: "probelet-two-agents-" });
    const id = crypto.randomUUID().slice(0, 8);
    const previousSink = log.setLogSink(() => {});
    const nodes = [`alpha-${id}`, `beta-${id}`];
    const agents: Awaited<ReturnType<typeof runKubelet>>[] = [];
    try {
      for (const node of nodes) {
        await Deno.mkdir(join(base, node, "pods"), { recursive: true });
        await Deno.writeTextFile(
          join(base, node, "pods", "sleeper.yaml"),
          `apiVersion: v1
kind: Pod
metadata: { name: sleeper }
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - { name: app, image: ${testImage}, command: [sleep, "3600"] }
`,
        );
        const agent = await runKubelet({
          containerRuntimeEndpoint: criEndpoint(),
          podManifestPath: join(base, node, "pods"),
          rootDir: join(base, node, "root"),
          nodeName: node,
          port: -1,
          stopPodsOnExit: true,
        });
        agents.push(agent);
        await waitFor(
          `${node}'s pod running`,
          () =>
            agent.kubelet.getPod(`sleeper-${node}`)?.status.containerStatuses?.[0]?.state?.running,
        );
      }
      const [alpha, beta] = agents;
      const alphaID = alpha.kubelet.getPod(`sleeper-${nodes[0]}`)!.status.containerStatuses![0]
        .containerID;
      // beta started after alpha ran: its start-up clean-up did not touch alpha's pod; its garbage
      // collection does not either, and stopping beta with its pods leaves alpha's running.
      await beta.kubelet.garbageCollect();
      await beta.stop();
      const runtime = await connectRuntime();
      try {
        const alive = await runtime.listContainers({
          labelSelector: { [probeletNodeLabel]: nodes[0] },
        });
        assertEquals(alive.map((c) => [`containerd://${c.id}`, c.state]), [
          [alphaID, "CONTAINER_RUNNING"],
        ]);
        assertEquals(
          await runtime.listContainers({ labelSelector: { [probeletNodeLabel]: nodes[1] } }),
          [],
        );
      } finally {
        runtime.close();
      }
      const status = alpha.kubelet.getPod(`sleeper-${nodes[0]}`)!.status.containerStatuses![0];
      assertEquals([status.containerID, status.restartCount], [alphaID, 0]);
    } finally {
      for (const agent of agents) await agent.stop().catch(() => {});
      for (const node of nodes) await removeNodeObjects(node);
      log.setLogSink(previousSink);
      await Deno.remove(base, { recursive: true });
    }
  },
});

Deno.test({
  name: "a crash-looping container on containerd leaves at most one dead instance",
  ignore: skipReason !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const base = await Deno.makeTempDir({ prefix: "probelet-crashloop-" });
    const node = `crash-${crypto.randomUUID().slice(0, 8)}`;
    const previousSink = log.setLogSink(() => {});
    await Deno.mkdir(join(base, "pods"));
    await Deno.writeTextFile(
      join(base, "pods", "crasher.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: crasher }
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - { name: app, image: ${testImage}, command: [sh, -c, "exit 3"] }
`,
    );
    const agent = await runKubelet({
      containerRuntimeEndpoint: criEndpoint(),
      podManifestPath: join(base, "pods"),
      rootDir: join(base, "root"),
      nodeName: node,
      port: -1,
      stopPodsOnExit: true,
      // Restarts a second or two apart, so each death is relisted (1 s) before the next start.
      backOff: { initialMs: 1000, maxMs: 2000 },
    });
    const runtime = await connectRuntime();
    try {
      const instances = async () =>
        (await runtime.listContainers({ labelSelector: { [probeletNodeLabel]: node } })).length;
      let most = 0;
      await waitFor("six restarts", async () => {
        most = Math.max(most, await instances());
        return (agent.kubelet.getPod(`crasher-${node}`)?.status.containerStatuses?.[0]
          ?.restartCount ?? 0) >= 6;
      }, { timeoutMs: 30_000 });
      // Without clean-up there would be seven instances by now; with it the newest dead one stays,
      // plus the running one and, for less than a relist, one that just died.
      assert(most <= 3, `${most} instances of the container at once`);
      await waitFor("one dead instance", async () => {
        const listed = await runtime.listContainers({
          labelSelector: { [probeletNodeLabel]: node },
        });
        return listed.filter((c) => c.state === "CONTAINER_EXITED").length <= 1;
      });
      const status = agent.kubelet.getPod(`crasher-${node}`)!.status.containerStatuses![0];
      assertEquals(
        status.lastState?.terminated?.exitCode ?? status.state?.terminated?.exitCode,
        3,
      );
    } finally {
      await agent.stop();
      runtime.close();
      await removeNodeObjects(node);
      log.setLogSink(previousSink);
      await Deno.remove(base, { recursive: true });
    }
  },
});

// Whatever a failed test left on containerd for this node: stopped and removed by ID.
async function removeNodeObjects(node: string): Promise<void> {
  const runtime = await connectRuntime();
  try {
    const selector = { labelSelector: { [probeletNodeLabel]: node } };
    for (const s of await runtime.listPodSandbox(selector)) {
      await runtime.stopPodSandbox(s.id).catch(() => {});
      await runtime.removePodSandbox(s.id).catch(() => {});
    }
  } finally {
    runtime.close();
  }
}
