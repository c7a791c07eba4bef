/**
 * The CLI's log lines, as a person lines them up with events: with the default text format every
 * stderr line carries klog's header (`I1123 03:04:05.123456   12345 file.ts:42] "msg" k="v"`);
 * with `--logging-format=json` every line is one JSON object with kubelet's keys.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { startCli } from "./helpers.ts";

// Runs the agent on an empty manifest folder until /healthz answers, stops it, returns stderr.
async function runOnce(extra: string[]): Promise<string[]> {
  const base = await Deno.makeTempDir({ prefix: "probelet-logging-" });
  await Deno.mkdir(join(base, "pods"));
  try {
    const cli = await startCli([
      "--pod-manifest-path",
      join(base, "pods"),
      "--root-dir",
      join(base, "root"),
      "--v=4",
      ...extra,
    ]);
    cli.child.kill("SIGTERM");
    assertEquals((await cli.child.status).code, 0);
    return (await cli.stderr).split("\n").filter((l) => l !== "");
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
