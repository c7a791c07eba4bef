/**
 * The CLI's log lines, as a person lines them up with events: with the default text format every
 * stderr line carries klog's header (`I1123 03:04:05.123456   12345 file.ts:42] "msg" k="v"`);
 * with `--logging-format=json` every line is one JSON object with kubelet's keys.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { waitFor } from "./helpers.ts";

const mainPath = new URL("../../src/cmd/probelet/main.ts", import.meta.url).pathname;

// Runs the agent on an empty manifest folder until /healthz answers, stops it, returns stderr.
async function runOnce(extra: string[]): Promise<string[]> {
  const base = await Deno.makeTempDir({ prefix: "probelet-logging-" });
  await Deno.mkdir(join(base, "pods"));
  try {
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
          "--live-view",
          "never",
          "--v=4",
          ...extra,
        ],
        stdout: "null",
        stderr: "piped",
      }).spawn();
      const stderr = new Response(child.stderr).text();
      let exited = false;
      child.status.then(() => exited = true);
      const up = await waitFor("/healthz (or an exit)", async () => {
        if (exited) return "exited";
        try {
          return (await (await fetch(`http://127.0.0.1:${port}/healthz`)).text()) === "ok" && "up";
        } catch {
          return undefined;
        }
      });
      if (up === "up") {
        child.kill("SIGTERM");
        assertEquals((await child.status).code, 0);
        return (await stderr).split("\n").filter((l) => l !== "");
      }
      const text = await stderr;
      if (!/AddrInUse|address already in use/i.test(text) || attempt >= 5) throw new Error(text);
    }
  } finally {
    await Deno.remove(base, { recursive: true });
  }
}

Deno.test({
  name: "probelet CLI: klog's header on every log line",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const lines = await runOnce([]);
    assert(lines.length > 3, lines.join("\n"));
    for (const line of lines) {
      assert(
        /^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [\w.-]+\.ts:\d+\] "/.test(line),
        `not a klog line: ${line}`,
      );
    }
    assert(lines.some((l) => /kubelet\.ts:\d+\] "Starting probelet node agent"/.test(l)));
  },
});

Deno.test({
  name: "probelet CLI: --logging-format=json writes kubelet's JSON lines",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const lines = await runOnce(["--logging-format=json"]);
    assert(lines.length > 3, lines.join("\n"));
    for (const line of lines) {
      const entry = JSON.parse(line);
      assertEquals(Object.keys(entry).slice(0, 3), ["ts", "caller", "msg"], line);
      assertEquals(typeof entry.ts, "number");
      assert(/^[\w.-]+\/[\w.-]+\.ts:\d+$/.test(entry.caller), line);
      assert("v" in entry || "err" in entry, line);
    }
    const start = lines.map((l) => JSON.parse(l)).find((e) =>
      e.msg === "Starting probelet node agent"
    );
    assertEquals(start?.v, 0);
    assert(start.caller.startsWith("kubelet/kubelet.ts:"));
  },
});
