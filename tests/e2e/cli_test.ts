/**
 * The CLI as a subprocess: it serves /healthz and /pods, runs a static pod on the embedded runtime,
 * and on SIGTERM (or SIGINT) stops the pod's processes and exits 0.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { killRecordedGroups } from "../../src/kubelet/kuberuntime/embedded/mod.ts";
import { waitFor } from "./helpers.ts";

const mainPath = new URL("../../src/cmd/probelet/main.ts", import.meta.url).pathname;

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

interface Cli {
  child: Deno.ChildProcess;
  port: number;
  stderr: Promise<string>;
  // deno-lint-ignore no-explicit-any
  pods: any;
}

// Starts the CLI on a random port below the ephemeral range and waits for the pod to run; a port
// somebody else holds makes the agent exit at once, and another port is tried.
async function startCli(base: string): Promise<Cli> {
  for (let attempt = 0;; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        mainPath,
        "--pod-manifest-path",
        join(base, "pods"),
        "--root-dir",
        join(base, "root"),
        "--port",
        String(port),
        "--node-name",
        "cli",
        "--live-view",
        "never",
      ],
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const stderr = new Response(child.stderr).text();
    let exited = false;
    child.status.then(() => exited = true);
    const pods = await waitFor("the pod running (or the agent exiting)", async () => {
      if (exited) return { exited: true };
      try {
        const res = await fetch(`http://127.0.0.1:${port}/pods`);
        const list = await res.json();
        const app = list.items[0]?.status?.containerStatuses?.[0];
        return app?.state?.running ? list : undefined;
      } catch {
        return undefined;
      }
    }, { timeoutMs: 20_000 }).catch(async (e) => {
      if (!exited) child.kill("SIGKILL");
      await child.status;
      throw e;
    });
    if (!pods.exited) return { child, port, stderr, pods };
    const log = await stderr;
    if (!/AddrInUse|address already in use/i.test(log) || attempt >= 5) {
      throw new Error(`probelet exited before the pod ran:\n${log}`);
    }
  }
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
        const cli = await startCli(base);
        child = cli.child;
        const { port, stderr, pods } = cli;
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
