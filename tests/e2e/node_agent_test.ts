/**
 * End-to-end tests of the node agent: static pods from manifest files run on the embedded runtime
 * (host processes) and on the private containerd, with real probes on real time. All scenario pods
 * start together so the suite takes about as long as its slowest scenario.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import {
  condition,
  containerStatus,
  type E2EAgent,
  type E2ERuntime,
  startAgent,
  waitFor,
} from "./helpers.ts";
import { criEndpoint, integrationSkipReason, testImage } from "../integration/helpers.ts";

// Commands run by sh: exit at once on SIGTERM (a PID 1 shell would otherwise ignore it).
const idle = "trap 'exit 0' TERM; sleep 600 & wait";

function manifests(runtime: E2ERuntime, stateDir: string): Record<string, string> {
  const image = runtime === "containerd" ? testImage : "busybox";
  // Each container sees its own /tmp under containerd; host processes share a per-pod folder.
  const dir = (pod: string) => runtime === "containerd" ? "/tmp" : join(stateDir, pod);
  const pod = (name: string, containers: string) =>
    `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 2
  containers:
${containers}`;
  const exec = (cmd: string[]) => `exec:\n          command: ${JSON.stringify(cmd)}`;
  return {
    "liveness.yaml": pod(
      "liveness",
      `  - name: app
    image: ${image}
    command: ["sh", "-c", ${
        JSON.stringify(
          `mkdir -p ${dir("liveness")}; touch ${dir("liveness")}/healthy; sleep 2; rm -f ${
            dir("liveness")
          }/healthy; ${idle}`,
        )
      }]
    livenessProbe:
        ${exec(["test", "-f", `${dir("liveness")}/healthy`])}
        periodSeconds: 1
        failureThreshold: 1
        terminationGracePeriodSeconds: 1
`,
    ),
    "readiness.yaml": pod(
      "readiness",
      `  - name: app
    image: ${image}
    command: ["sh", "-c", ${JSON.stringify(idle)}]
    readinessProbe:
        ${exec(["test", "-f", `${dir("readiness")}/never`])}
        periodSeconds: 1
`,
    ),
    "startup.yaml": pod(
      "startup",
      `  - name: app
    image: ${image}
    command: ["sh", "-c", ${
        JSON.stringify(
          `mkdir -p ${dir("startup")}; rm -f ${dir("startup")}/started; (sleep 3; touch ${
            dir("startup")
          }/started) & ${idle}`,
        )
      }]
    startupProbe:
        ${exec(["test", "-f", `${dir("startup")}/started`])}
        periodSeconds: 1
        failureThreshold: 30
    livenessProbe:
        ${exec(["test", "-f", `${dir("startup")}/started`])}
        periodSeconds: 1
        failureThreshold: 1
    readinessProbe:
        ${exec(["test", "-f", `${dir("startup")}/started`])}
        periodSeconds: 1
`,
    ),
    "exec-timeout.yaml": pod(
      "exec-timeout",
      `  - name: app
    image: ${image}
    command: ["sh", "-c", ${JSON.stringify(idle)}]
    livenessProbe:
        ${exec(["sleep", "3"])}
        timeoutSeconds: 1
        periodSeconds: 1
        failureThreshold: 1
`,
    ),
    // A bad file: its pod never runs, the others are unaffected.
    "broken.yaml": pod(
      "broken",
      `  - name: app
    image: ${image}
    command: ["sh", "-c", ${JSON.stringify(idle)}]
    livenessProbe:
        httpGet:
          port: bad_port
`,
    ),
    // Asks for a stop signal probelet does not pass: refused at admission, never started.
    "hooked.yaml": pod(
      "hooked",
      `  - name: app
    image: ${image}
    command: ["sh", "-c", ${JSON.stringify(idle)}]
    lifecycle:
      stopSignal: SIGUSR1
`,
    ),
    "doomed.yaml": pod(
      "doomed",
      `  - name: app
    image: ${image}
    command: ["sh", "-c", ${JSON.stringify(idle)}]
`,
    ),
  };
}

const killingLiveness = "Normal Killing Container app failed liveness probe, will be restarted";

async function scenarios(t: Deno.TestContext, agent: E2EAgent, runtime: E2ERuntime) {
  await t.step(
    "a failing liveness probe restarts the container, then CrashLoopBackOff",
    async () => {
      const describe = () => containerStatus(agent.pod("liveness"), "app");
      await waitFor("restartCount 1", () => (describe()?.restartCount ?? 0) >= 1, { describe });
      await waitFor("restartCount 2", () => (describe()?.restartCount ?? 0) >= 2, { describe });
      const kills = agent.eventsOf("liveness").filter((e) => e === killingLiveness);
      assert(kills.length >= 2, `Killing events: ${JSON.stringify(agent.eventsOf("liveness"))}`);
      assert(
        agent.eventsOf("liveness").some((e) =>
          e.startsWith("Warning Unhealthy Liveness probe failed")
        ),
      );
      // The third failure falls inside the 10 s back-off that started with the second restart:
      // the sync that meets it records BackOff. As on kubelet v1.36.3 the killed container then
      // shows terminated, with the kill before it as lastState, until the retry at the back-off's
      // end, whose sync shows CrashLoopBackOff until the restart is seen (up to 1 s: too short to
      // poll for reliably).
      const backOff = "Warning BackOff Back-off restarting failed container app in pod";
      await waitFor(
        "a BackOff event",
        () => agent.eventsOf("liveness").some((e) => e.startsWith(backOff)),
        { describe, timeoutMs: 25_000 },
      );
      const status = describe()!;
      const waiting = status.state?.waiting;
      if (waiting) {
        assertEquals(waiting.reason, "CrashLoopBackOff");
        assert(waiting.message?.startsWith("back-off 10s restarting failed container=app"));
      }
      assert(status.lastState?.terminated, "the killed instance is the last termination");
    },
  );

  await t.step(
    "a failing readiness probe keeps the pod not Ready and never restarts it",
    async () => {
      const describe = () => agent.pod("readiness")?.status;
      await waitFor(
        "three readiness failures",
        () =>
          agent.eventsOf("readiness").filter((e) =>
            e.startsWith("Warning Unhealthy Readiness probe failed")
          )
            .length >= 3,
        { describe },
      );
      const pod = agent.pod("readiness");
      assertEquals(pod?.status.phase, "Running");
      assertEquals(condition(pod, "Ready"), "False");
      assertEquals(condition(pod, "ContainersReady"), "False");
      const cs = containerStatus(pod, "app");
      assertEquals(cs?.ready, false);
      assertEquals(cs?.started, true);
      assertEquals(cs?.restartCount, 0);
      assert(!agent.eventsOf("readiness").some((e) => e.includes("Killing")));
    },
  );

  await t.step(
    "a startup probe holds back liveness; readiness turns true right after",
    async () => {
      const describe = () => containerStatus(agent.pod("startup"), "app");
      await waitFor("ready", () => describe()?.ready === true, { describe });
      const seen = agent.history.filter((h) => h.pod === "startup" && h.container === "app");
      const firstStarted = seen.find((h) => h.started === true);
      const firstReady = seen.find((h) => h.ready === true);
      assert(firstStarted && firstReady, JSON.stringify(seen));
      assert(
        seen.some((h) => h.running && h.started === false && !h.ready && h.at < firstStarted.at),
        "running but not started (and not ready) before the startup probe succeeded",
      );
      assert(firstReady.at >= firstStarted.at, "not ready before started");
      assert(
        firstReady.at - firstStarted.at < 10_000, // wall clock: generous for a loaded machine
        "readiness follows within a couple of periods",
      );
      assertEquals(condition(agent.pod("startup"), "Ready"), "True");
      assertEquals(describe()?.restartCount, 0);
      const events = agent.eventsOf("startup");
      assert(
        events.some((e) => e.startsWith("Warning Unhealthy Startup probe failed")),
        "startup failed first",
      );
      assert(
        !events.some((e) => e.includes("Liveness")),
        `liveness never ran early: ${JSON.stringify(events)}`,
      );
    },
  );
  await t.step("an exec probe that times out is a failure", async () => {
    const describe = () => containerStatus(agent.pod("exec-timeout"), "app");
    await waitFor("a restart", () => (describe()?.restartCount ?? 0) >= 1, { describe });
    const events = agent.eventsOf("exec-timeout");
    assert(
      events.includes(
        'Warning Unhealthy Liveness probe failed: command timed out: "sleep 3" timed out after 1s',
      ),
      JSON.stringify(events),
    );
    assert(events.includes(killingLiveness));
  });

  await t.step("a bad manifest is reported with its file and field; the others run", () => {
    const errors = agent.kubelet.manifestErrors().map((e) => e.message);
    assert(
      errors.some((m) => m.includes("broken.yaml") && m.includes("livenessProbe.httpGet.port")),
      JSON.stringify(errors),
    );
    assertEquals(agent.pod("broken"), undefined);
    assert(agent.pod("readiness") && agent.pod("liveness"));
  });

  await t.step("a pod asking for a stop signal is refused and never started", async () => {
    const hooked = () => agent.kubelet.pods().find((p) => p.metadata.name?.startsWith("hooked-"));
    const pod = await waitFor(
      "hooked Failed",
      () => hooked()?.status.phase === "Failed" && hooked(),
      {
        describe: () => hooked()?.status,
      },
    );
    assertEquals(pod.status.reason, "PodFeatureUnsupported");
    assertEquals(
      pod.status.message,
      "Pod was rejected: spec.containers[0].lifecycle.stopSignal is not supported by this node",
    );
    assert(
      agent.eventsOf("hooked").some((e) => e.startsWith("Warning PodFeatureUnsupported ")),
      JSON.stringify(agent.eventsOf("hooked")),
    );
    const selector = { labelSelector: { "io.kubernetes.pod.uid": pod.metadata.uid! } };
    assertEquals(await agent.runtime.listPodSandbox(selector), []);
    assertEquals(await agent.runtime.listContainers(selector), []);
  });

  await t.step("a removed manifest tears the pod down", async () => {
    const pod = await waitFor("doomed running", () => {
      const p = agent.pod("doomed");
      return containerStatus(p, "app")?.state?.running && p;
    });
    const uid = pod.metadata.uid!;
    await agent.removeManifest("doomed.yaml");
    await waitFor("pod gone", () => agent.pod("doomed") === undefined, { timeoutMs: 15_000 });
    const selector = { labelSelector: { "io.kubernetes.pod.uid": uid } };
    assertEquals(await agent.runtime.listPodSandbox(selector), []);
    assertEquals(await agent.runtime.listContainers(selector), []);
    assertEquals(agent.kubelet.statusManager.getPodStatus(uid), undefined);
    assert(
      ![...agent.kubelet.probeManager.workers.values()].some((w) => w.pod.metadata.uid === uid),
    );
    // Other pods keep running.
    assert(agent.pod("readiness"), `${runtime}: other pods untouched`);
  });
}

/** PIDs of processes whose command line mentions `text`. */
async function processesMentioning(text: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name) || Number(entry.name) === Deno.pid) continue;
    try {
      const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
      if (cmdline.includes(text)) pids.push(Number(entry.name));
    } catch {
      // Exited meanwhile.
    }
  }
  return pids;
}

async function startWithPort(
  runtime: E2ERuntime,
  stateDir: string,
  options: { endpoint?: string },
): Promise<E2EAgent> {
  // A port below the ephemeral range; retry on a collision.
  for (let attempt = 0;; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    try {
      return await startAgent(runtime, manifests(runtime, stateDir), { ...options, port });
    } catch (e) {
      const inUse = e instanceof Deno.errors.AddrInUse ||
        (e instanceof Error && e.cause instanceof Deno.errors.AddrInUse);
      if (!inUse || attempt >= 5) throw e;
    }
  }
}

Deno.test({
  name: "node agent e2e: embedded runtime",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const stateDir = await Deno.makeTempDir({ prefix: "probelet-e2e-state-" });
    const agent = await startWithPort("embedded", stateDir, {});
    try {
      await scenarios(t, agent, "embedded");
      await t.step("HTTP endpoints", async () => {
        const get = async (path: string) => {
          const res = await fetch(`${agent.url}${path}`);
          return {
            status: res.status,
            type: res.headers.get("content-type"),
            body: await res.text(),
          };
        };
        assertEquals((await get("/healthz")).body, "ok");
        const pods = JSON.parse((await get("/pods")).body);
        assertEquals(pods.kind, "PodList");
        assert(
          pods.items.some((p: { metadata: { name: string } }) =>
            p.metadata.name === "liveness-e2e"
          ),
        );
        const events = JSON.parse((await get("/events")).body);
        assert(events.items.some((e: { reason: string }) => e.reason === "Killing"));
        const metrics = await get("/metrics/probes");
        assert(metrics.type?.startsWith("text/plain"));
        assert(/prober_probe_total\{probe_type="Liveness",[^}]*result="failed"/.test(metrics.body));
        assertEquals((await get("/nope")).status, 404);
      });
    } finally {
      await agent.close();
      try {
        await t.step("no host process outlives the agent", async () => {
          assertEquals(await processesMentioning(stateDir), []);
        });
      } finally {
        await Deno.remove(stateDir, { recursive: true });
      }
    }
  },
});

const containerdSkip = await integrationSkipReason();
if (containerdSkip) console.log(`node agent e2e on containerd skipped: ${containerdSkip}`);

Deno.test({
  name: "node agent e2e: containerd",
  ignore: containerdSkip !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const stateDir = await Deno.makeTempDir({ prefix: "probelet-e2e-state-" });
    const agent = await startAgent("containerd", manifests("containerd", stateDir), {
      endpoint: criEndpoint(),
    });
    try {
      await scenarios(t, agent, "containerd");
      await t.step("pods get an IP from the CNI bridge", () => {
        const ip = agent.pod("readiness")?.status.podIP ?? "";
        assert(/^\d+\.\d+\.\d+\.\d+$/.test(ip) && ip !== "127.0.0.1", `pod IP ${ip}`);
      });
    } finally {
      await agent.close();
      await Deno.remove(stateDir, { recursive: true });
    }
  },
});
