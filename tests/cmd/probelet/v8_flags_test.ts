/**
 * The agent starts with V8's young generation capped (`--max-semi-space-size`): without the cap V8
 * grows the young generation with the allocation rate, to ~58 MiB committed at 100 pods while the
 * live heap stays under 50 (docs/benchmarks/memory.md). The cap only holds when it is on the
 * command line that starts the process (V8 sizes the heap when the isolate is made;
 * `v8.setFlagsFromString` later changes nothing), so the commands users run must carry it: the
 * `start` task and the command `src/cmd/probelet/main.ts` documents.
 * @module
 */
import assert from "node:assert/strict";

const root = new URL("../../../", import.meta.url);

/** The `--v8-flags=...` word of a command line, or undefined. */
function v8FlagsOf(command: string): string | undefined {
  return command.split(/\s+/).find((word) => word.startsWith("--v8-flags="));
}

/** The young generation's committed size (MiB) of a process started with `v8Flags`, after churn. */
async function youngGenerationMiB(v8Flags: string[]): Promise<number> {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/churn.ts`;
    // Short-lived objects at a high rate: what makes V8 grow an uncapped young generation.
    await Deno.writeTextFile(
      script,
      `import v8 from "node:v8";
const keep: unknown[] = [];
for (let i = 0; i < 2_000_000; i++) {
  keep.push({ i, s: "x" + i });
  if (keep.length > 1000) keep.length = 0;
}
const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
console.log(young?.space_size ?? -1);
`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-config", "--no-lock", ...v8Flags, script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    return Number(new TextDecoder().decode(out.stdout).trim()) / 1048576;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the agent's V8 flags", async (t) => {
  const tasks = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))).tasks as Record<
    string,
    string
  >;
  const startFlags = v8FlagsOf(tasks.start);

  await t.step("the start task caps the young generation", () => {
    assert.match(startFlags ?? "", /--max-semi-space-size=\d+/, tasks.start);
  });

  await t.step("main.ts documents the same command", async () => {
    const header = await Deno.readTextFile(new URL("src/cmd/probelet/main.ts", root));
    const documented = /^ \* deno run .*main\.ts.*$/m.exec(header)?.[0] ?? "";
    assert.equal(v8FlagsOf(documented), startFlags, documented);
  });

  await t.step("the flag holds the young generation at its cap", async () => {
    const cap = Number(/--max-semi-space-size=(\d+)/.exec(startFlags ?? "")?.[1]);
    assert.ok(cap > 0, `no cap in ${startFlags}`);
    const young = await youngGenerationMiB([startFlags!]);
    // Two semi-spaces of `cap` MiB at most; uncapped, this churn grows it to 16 MiB.
    assert.ok(young <= 2 * cap, `young generation ${young} MiB with ${startFlags}`);
  });
});
