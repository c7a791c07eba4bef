/**
 * Issue 10.6 through the real CLI: a container printing hundreds of megabytes keeps the agent's
 * memory flat (the container's shim holds the pipe and reads only as fast as it writes, so the
 * pipe pushes back), its log rotates to at most --container-log-max-files files of at most
 * --container-log-max-size, and removing the pod is prompt. Prints the figures it measured.
 */
import { ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { killRecordedGroups, rotatedLogFiles } from "../../src/runtime/embedded/mod.ts";
import { waitFor } from "./helpers.ts";

const mainPath = new URL("../../src/cmd/probelet/main.ts", import.meta.url).pathname;
const floodBytes = 300 * 1000 * 1000;
const maxSize = 1024 * 1024;
const maxFiles = 3;

function rssKiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

async function findFiles(dir: string, suffix: RegExp): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      const path = join(dir, e.name);
      if (e.isDirectory) out.push(...await findFiles(path, suffix));
      else if (suffix.test(e.name)) out.push(path);
    }
  } catch {
    // removed meanwhile
  }
  return out;
}

Deno.test({
  name: "embedded runtime: a flooding container keeps the agent flat, rotates, goes promptly",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const base = await Deno.makeTempDir({ prefix: "probelet-flood-" });
    const root = join(base, "root");
    const manifest = join(base, "pods", "flood.yaml");
    await Deno.mkdir(join(base, "pods"));
    await Deno.writeTextFile(
      manifest,
      `apiVersion: v1
kind: Pod
metadata:
  name: flood
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    command: ["sh", "-c", "l=$(head -c 1000 /dev/zero | tr '\\\\0' x); yes \\"$l\\" | head -c ${floodBytes}; echo; echo FLOOD-DONE; exec sleep 600"]
`,
    );
    let child: Deno.ChildProcess | undefined;
    try {
      let port = 0;
      let running = false;
      for (let attempt = 0; attempt < 5 && !running; attempt++) {
        port = 20_000 + Math.floor(Math.random() * 10_000);
        child = new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "-A",
            mainPath,
            ...["--pod-manifest-path", join(base, "pods"), "--root-dir", root],
            ...[
              "--read-only-port",
              String(port),
              "--port",
              "0",
              "--node-name",
              "flood",
              "--live-view",
              "never",
            ],
            ...["--container-log-max-size", "1Mi", "--container-log-max-files", String(maxFiles)],
          ],
          stdout: "null",
          stderr: "null",
        }).spawn();
        let exited = false;
        child.status.then(() => exited = true);
        running = await waitFor("the flooding pod running", async () => {
          if (exited) return "exited";
          try {
            const list = await (await fetch(`http://127.0.0.1:${port}/pods`)).json();
            return list.items[0]?.status?.containerStatuses?.[0]?.state?.running
              ? "running"
              : undefined;
          } catch {
            return undefined;
          }
        }, { timeoutMs: 20_000 }) === "running";
      }
      assert(running && child, "the agent ran the pod");
      const agentPid = child.pid;
      const baseline = rssKiB(agentPid);
      let peak = baseline;
      let shimPeak = 0;
      const shims = async () => {
        const states = await findFiles(join(root, "embedded", "containers"), /^state\.json$/);
        return states.map((f) => {
          try {
            return JSON.parse(Deno.readTextFileSync(f)).shimPid as number;
          } catch {
            return 0; // removed meanwhile
          }
        });
      };
      const started = Date.now();
      const logs = () => findFiles(join(root, "pods"), /\.log$/);
      await waitFor("the flood to be written", async () => {
        peak = Math.max(peak, rssKiB(agentPid));
        for (const pid of await shims()) shimPeak = Math.max(shimPeak, rssKiB(pid));
        for (const log of await logs()) {
          // A file may be rotated away between the listing and the read.
          const text = await Deno.readTextFile(log).catch(() => "");
          if (text.includes("stdout F FLOOD-DONE")) return true;
        }
        return undefined;
      }, { timeoutMs: 240_000 });
      const floodSeconds = (Date.now() - started) / 1000;

      const [log] = await logs();
      const files = [log, ...await rotatedLogFiles(log)];
      const sizes = files.map((f) => Deno.statSync(f).size);
      console.log(
        `flood: ${floodBytes / 1e6} MB in ${floodSeconds.toFixed(1)} s; agent RSS ` +
          `${(baseline / 1024).toFixed(0)} -> peak ${(peak / 1024).toFixed(0)} MiB; shim peak ` +
          `${(shimPeak / 1024).toFixed(0)} MiB; log files ${files.length}, sizes ${
            sizes.join(", ")
          }`,
      );
      assert(peak - baseline < 64 * 1024, `agent RSS grew ${peak - baseline} KiB`);
      assert(shimPeak < 200 * 1024, `shim RSS ${shimPeak} KiB`);
      assert(files.length <= maxFiles, `${files.length} log files`);
      for (const size of sizes) assert(size <= maxSize, `a log file of ${size} bytes`);

      // Removing the pod is prompt: the container goes within seconds, not minutes.
      const removing = Date.now();
      await Deno.remove(manifest);
      await waitFor("the pod to be removed", async () => {
        const list = await (await fetch(`http://127.0.0.1:${port}/pods`)).json();
        return list.items.length === 0 && (await shims()).length === 0 ? true : undefined;
      }, { timeoutMs: 30_000 });
      const removeSeconds = (Date.now() - removing) / 1000;
      console.log(`flood: pod removed in ${removeSeconds.toFixed(1)} s`);
      assert(removeSeconds < 15, `removal took ${removeSeconds} s`);
    } finally {
      try {
        child?.kill("SIGTERM");
      } catch {
        // exited
      }
      await child?.status;
      killRecordedGroups(join(root, "embedded"));
      await Deno.remove(base, { recursive: true });
    }
  },
});
