/**
 * The CLI as a subprocess: it serves /healthz and /pods, runs a static pod on the embedded runtime,
 * and on SIGTERM (or SIGINT) stops the pod's processes and exits 0.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { killRecordedGroups } from "../../src/runtime/embedded/mod.ts";
import { startCli } from "./helpers.ts";

async function processesMentioning(text: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
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

// The CLI with the pod folder under `base`, once its pod runs.
function startPodCli(base: string) {
  return startCli([
    "--pod-manifest-path",
    join(base, "pods"),
    "--root-dir",
    join(base, "root"),
    "--node-name",
    "cli",
  ], {
    what: "the pod running",
    ready: async (port) => {
      const list = await (await fetch(`http://127.0.0.1:${port}/pods`)).json();
      const app = list.items[0]?.status?.containerStatuses?.[0];
      return app?.state?.running ? list : undefined;
    },
  });
}

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  Deno.test({
    name: `probelet CLI: ${signal} stops the pods and exits 0`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      const base = await Deno.makeTempDir({ prefix: "probelet-cli-" });
      const marker = join(base, "marker");
      await Deno.mkdir(join(base, "pods"));
      await Deno.writeTextFile(
        join(base, "pods", "sleeper.yaml"),
        `apiVersion: v1
kind: Pod
metadata:
  name: sleeper
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox
    command: ["sh", "-c", "sleep 600 # ${marker}"]
`,
      );
      let child: Deno.ChildProcess | undefined;
      try {
        const cli = await startPodCli(base);
        child = cli.child;
        const { port, stderr, ready: pods } = cli;
        assertEquals(pods.items[0].metadata.name, "sleeper-cli");
        assertEquals(await (await fetch(`http://127.0.0.1:${port}/healthz`)).text(), "ok");
        assert(
          (await processesMentioning(marker)).length > 0,
          "the container runs as a host process",
        );
        child.kill(signal);
        const status = await child.status;
        const log = await stderr;
        assertEquals(status.code, 0, log);
        assert(log.includes("Pod terminated and removed"), log);
        assertEquals(await processesMentioning(marker), []);
      } finally {
        try {
          child?.kill("SIGKILL");
        } catch {
          // Already exited.
        }
        await child?.status;
        // Container processes the agent left (it was killed, or failed): by the pids the embedded
        // runtime recorded, checked against their start times — never by name.
        killRecordedGroups(join(base, "root", "embedded"));
        await Deno.remove(base, { recursive: true });
      }
    },
  });
}
