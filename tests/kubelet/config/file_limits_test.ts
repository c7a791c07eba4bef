/**
 * The manifest source against hostile folders (issue 10): named pipes, symlink loops and dangling
 * symlinks, unreadable files, oversized files and documents, names that would escape the state
 * folder or overflow a file name, values beyond int32, and secrets in error messages.
 */
import nodeAssert from "node:assert/strict";
import { join } from "node:path";
import {
  inlineDecoder,
  loadPodManifests,
  type ManifestDecoder,
  maxDocumentsPerFile,
  maxManifestBytes,
  parsePodManifest,
  type PodUpdate,
  watchManifests,
} from "../../../src/kubelet/config/mod.ts";
import { openRegularFile } from "../../../src/kubelet/config/file_linux.ts";
import { FakeClock } from "../../../src/util/clock.ts";

const nodeName = "node-a";
function assert(value: unknown, message?: string): asserts value {
  if (message === undefined) nodeAssert.ok(value);
  else nodeAssert.ok(value, message);
}
function assertEquals<T>(actual: unknown, expected: T, message?: string): void {
  if (message === undefined) nodeAssert.deepStrictEqual(actual, expected);
  else nodeAssert.deepStrictEqual(actual, expected, message);
}
const assertMatch = (a: string, re: RegExp) => nodeAssert.match(a, re);

function podYaml(name: string, metaLines: string[] = [], containerLines: string[] = []): string {
  return [
    "apiVersion: v1",
    "kind: Pod",
    "metadata:",
    `  name: ${name}`,
    ...metaLines.map((l) => `  ${l}`),
    "spec:",
    "  containers:",
    "  - name: app",
    "    image: busybox:1",
    "    command: [sh, -c, sleep 1000]",
    ...containerLines.map((l) => `    ${l}`),
    "",
  ].join("\n");
}

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "probelet-limits-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Polls `fn` on the event loop until it is true; fails after `ms` of wall time (a deadline). */
async function until(what: string, fn: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Fails if `p` has not settled after `ms` of wall time. */
async function within<T>(what: string, p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function errorsOf(text: string) {
  const { errors } = await parsePodManifest(text, { file: "web.yaml", nodeName });
  return errors.map((e) => e.message);
}

Deno.test("manifest folder with a named pipe: still watched, never opened, stops promptly", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(join(dir, "a.yaml"), podYaml("alpha"));
    const clock = new FakeClock(0);
    const updates: PodUpdate[] = [];
    const watcher = await watchManifests(dir, {
      nodeName,
      clock,
      debounceMs: 50,
      onChange: (u) => void updates.push(u),
    });
    let stopped = false;
    try {
      const made = await new Deno.Command("mkfifo", { args: [join(dir, "pipe.yaml")] }).output();
      assert(made.success, "mkfifo failed");
      // The FIFO's own notification arms the debounce; the listing reports it without opening it.
      await until("the FIFO noticed", () => clock.pendingTimers() >= 2);
      await clock.step(50);
      await within("the listing after the FIFO appeared", watcher.idle(), 5_000);
      assertEquals(updates.at(-1)!.errors.map((e) => e.message), [
        `${join(dir, "pipe.yaml")}: not a regular file (named pipe); not read`,
      ]);
      // A manifest added after the FIFO is still noticed through the notifications.
      await Deno.writeTextFile(join(dir, "b.yaml"), podYaml("beta"));
      await until("b.yaml noticed", () => clock.pendingTimers() >= 2);
      await clock.step(50);
      await within("the listing after b.yaml", watcher.idle(), 5_000);
      assertEquals(updates.at(-1)!.pods.map((p) => p.metadata.name), [
        "alpha-node-a",
        "beta-node-a",
      ]);
      assert(clock.now() < 20_000, "noticed before the periodic re-list");
      await within("stopping the watch", watcher.stop(), 5_000);
      stopped = true;
    } finally {
      if (!stopped) await watcher.stop();
    }
  });
});

Deno.test("symlinks: a loop keeps the file's pods, a dangling one removes them, both logged", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(join(dir, "a.yaml"), podYaml("alpha"));
    await Deno.writeTextFile(join(dir, "b.yaml"), podYaml("beta"));
    const updates: PodUpdate[] = [];
    const watcher = await watchManifests(dir, {
      nodeName,
      clock: new FakeClock(0),
      watchFs: false,
      onChange: (u) => void updates.push(u),
    });
    const names = () => updates.at(-1)!.pods.map((p) => p.metadata.name);
    try {
      assertEquals(names(), ["alpha-node-a", "beta-node-a"]);
      // a.yaml becomes a symlink loop: it cannot be read, so alpha stays, and the error says why.
      await Deno.remove(join(dir, "a.yaml"));
      await Deno.symlink(join(dir, "a.yaml"), join(dir, "a.yaml"));
      await watcher.resync();
      assertEquals(names(), ["beta-node-a", "alpha-node-a"]);
      const loop = updates.at(-1)!.errors.map((e) => e.message);
      assertEquals(loop.length, 1);
      assertMatch(loop[0], new RegExp(`^${join(dir, "a.yaml")}: cannot stat: .*symbolic links`));
      // Still unreadable at the next listing: still kept.
      await watcher.resync();
      assertEquals(names(), ["beta-node-a", "alpha-node-a"]);
      // b.yaml becomes a dangling symlink: its target is gone, which means "removed".
      await Deno.remove(join(dir, "b.yaml"));
      await Deno.symlink(join(dir, "gone.yaml"), join(dir, "b.yaml"));
      await watcher.resync();
      assertEquals(names(), ["alpha-node-a"]);
      assert(
        updates.at(-1)!.errors.some((e) =>
          e.message ===
            `${join(dir, "b.yaml")}: dangling symlink: target ${
              join(dir, "gone.yaml")
            } does not exist`
        ),
        updates.at(-1)!.errors.map((e) => e.message).join("\n"),
      );
      // The loop is fixed with new content: its pods follow the file again.
      await Deno.remove(join(dir, "a.yaml"));
      await Deno.writeTextFile(join(dir, "a.yaml"), podYaml("gamma"));
      await watcher.resync();
      assertEquals(names(), ["gamma-node-a"]);
    } finally {
      await watcher.stop();
    }
  });
});

Deno.test("a file over the size limit is refused from its size alone", async () => {
  await withTempDir(async (dir) => {
    // A sparse 1 GiB file of NUL bytes: reading or parsing it would take memory and seconds.
    const big = join(dir, "big.yaml");
    const f = await Deno.open(big, { write: true, create: true });
    await f.truncate(1024 * 1024 * 1024);
    f.close();
    await Deno.writeTextFile(join(dir, "ok.yaml"), podYaml("ok"));
    const started = performance.now();
    const listed = await loadPodManifests(dir, { nodeName });
    assert(performance.now() - started < 5_000);
    assertEquals(listed.pods.map((p) => p.metadata.name), ["ok-node-a"]);
    assertEquals(listed.errors.map((e) => e.message), [
      `${big}: file is 1073741824 bytes, more than the ${maxManifestBytes}-byte limit of a manifest; not parsed`,
    ]);
    // One byte over the limit: refused; at the limit: parsed (here: not a pod).
    await Deno.writeTextFile(big, "#".repeat(maxManifestBytes + 1));
    assertMatch((await loadPodManifests(big, { nodeName })).errors[0].detail, /more than the/);
    await Deno.writeTextFile(big, "#".repeat(maxManifestBytes));
    assertEquals((await loadPodManifests(big, { nodeName })).errors, []);
  });
});

Deno.test("too many documents: the file is refused without parsing the rest", async () => {
  const doc = podYaml("p");
  const many = Array.from({ length: 137_068 }, (_, i) => doc.replace("name: p", `name: p${i}`))
    .join("---\n");
  const started = performance.now();
  const { pods, errors } = await parsePodManifest(many, { file: "many.yaml", nodeName });
  assert(performance.now() - started < 10_000);
  assertEquals(pods, []);
  assertEquals(errors.map((e) => e.message), [
    `many.yaml: document ${
      maxDocumentsPerFile + 1
    }: more than ${maxDocumentsPerFile} documents in one file; the file is ignored`,
  ]);
  const limit = Array.from(
    { length: maxDocumentsPerFile },
    (_, i) => doc.replace("name: p", `name: p${i}`),
  )
    .join("---\n");
  assertEquals(
    (await parsePodManifest(limit, { file: "ok.yaml", nodeName })).pods.length,
    maxDocumentsPerFile,
  );
});

Deno.test("probes keep their timers while a large valid folder is parsed", async () => {
  await withTempDir(async (dir) => {
    // Two valid pods of ~2.8 MiB each: seconds of parsing, which must not happen on this thread.
    const env: string[] = ["env:"];
    for (let i = 0; i < 34_000; i++) {
      env.push(`- name: VAR_${i}`, `  value: "value number ${i} padding padding"`);
    }
    for (const name of ["one", "two"]) {
      await Deno.writeTextFile(join(dir, `${name}.yaml`), podYaml(name, [], env.slice(0)));
    }
    // A 5 ms ticker stands in for the probe workers' timers: count how often it ran.
    let ticks = 0;
    let done = false;
    const tick = () => {
      ticks++;
      if (!done) setTimeout(tick, 5);
    };
    setTimeout(tick, 5);
    const updates: PodUpdate[] = [];
    const watcher = await watchManifests(dir, {
      nodeName,
      watchFs: false,
      onChange: (u) => void updates.push(u),
    });
    done = true;
    await watcher.stop();
    assertEquals(updates[0].errors, []);
    assertEquals(updates[0].pods.map((p) => p.metadata.name), ["one-node-a", "two-node-a"]);
    // Parsing in place gives the ticker a handful of turns (between file reads); in the worker
    // it keeps running throughout.
    assert(ticks >= 50, `the ticker ran only ${ticks} times while the folder was parsed`);
  });
});

Deno.test("names used in paths are validated as the API server would", async (t) => {
  const cases: { name: string; text: string; error: RegExp }[] = [
    {
      name: "uid escaping the state folder",
      text: podYaml("web", ['uid: "../../../../tmp/x"']),
      error:
        /^web\.yaml: document 1: metadata\.uid: "\.\.\/\.\.\/\.\.\/\.\.\/tmp\/x" is not a valid uid/,
    },
    {
      name: "uid with a slash",
      text: podYaml("web", ["uid: a/b"]),
      error: /^web\.yaml: document 1: metadata\.uid: "a\/b" is not a valid uid/,
    },
    {
      name: "namespace with a slash",
      text: podYaml("web", ["namespace: a/b"]),
      error: /^web\.yaml: document 1: metadata\.namespace: "a\/b" is not a valid name/,
    },
    {
      name: "container name ..",
      text: podYaml("web").replace("- name: app", '- name: ".."'),
      error: /^web\.yaml: document 1: spec\.containers\[0\]\.name: "\.\." is not a valid name/,
    },
    {
      name: "name and namespace too long for a log folder",
      text: podYaml("a".repeat(200), [`namespace: ${"b".repeat(63)}`]),
      error:
        /^web\.yaml: document 1: metadata\.name: name and namespace too long: the pod's log folder name .* would be 308 bytes, more than the 255-byte file name limit$/,
    },
    {
      name: "name too long once the node name is appended",
      text: podYaml("a".repeat(250)),
      error:
        /^web\.yaml: document 1: metadata\.name: "a{40}"\.\.\. \(217 more characters\) is not a valid name/,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const errors = await errorsOf(c.text);
      assertEquals(errors.length, 1, errors.join("\n"));
      assertMatch(errors[0], c.error);
    });
  }
  await t.step("a UUID uid is accepted", async () => {
    assertEquals(await errorsOf(podYaml("web", ["uid: 6f1d2a1c-3b7e-4c53-9a1e-0d2b8e4f7a10"])), []);
  });
});

Deno.test("values beyond int32 are refused, naming the field", async (t) => {
  for (
    const field of ["periodSeconds", "timeoutSeconds", "initialDelaySeconds", "failureThreshold"]
  ) {
    await t.step(field, async () => {
      const text = podYaml("web", [], [
        "livenessProbe:",
        '  exec: {command: ["true"]}',
        `  ${field}: 1099511627776`,
      ]);
      assertEquals(await errorsOf(text), [
        `web.yaml: document 1: spec.containers[0].livenessProbe.${field}: 1099511627776: must be a 32-bit integer (at most 2147483647)`,
      ]);
    });
  }
  await t.step("int32 maximum is accepted", async () => {
    const text = podYaml("web", [], [
      "readinessProbe:",
      '  exec: {command: ["true"]}',
      "  periodSeconds: 2147483647",
    ]);
    assertEquals(await errorsOf(text), []);
  });
  await t.step("terminationGracePeriodSeconds is int64 in the API: 2^53-1 is valid", async () => {
    const text = podYaml("web").replace(
      "spec:\n",
      "spec:\n  terminationGracePeriodSeconds: 9007199254740991\n",
    );
    assertEquals(await errorsOf(text), []);
  });
});

Deno.test("a manifest that is one plain value quotes only a short prefix", async () => {
  const secret = "s3cr3t-".repeat(200);
  const errors = await errorsOf(secret);
  assertEquals(errors, [
    `web.yaml: document 1: must be a mapping (a Pod object), got string "${
      secret.slice(0, 40)
    }"... (1360 more characters)`,
  ]);
  assert(!errors[0].includes(secret.slice(0, 60)));
});

Deno.test("a parser failure (not the content) keeps that file's pods", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(join(dir, "a.yaml"), podYaml("alpha"));
    await Deno.writeTextFile(join(dir, "b.yaml"), podYaml("beta"));
    let failB = false;
    const decoder: ManifestDecoder = {
      decode: (bytes, options) =>
        failB && options.source.endsWith("b.yaml")
          ? Promise.reject(new Error("manifest decoder failed: worker died"))
          : inlineDecoder.decode(bytes, options),
      close: () => {},
    };
    const updates: PodUpdate[] = [];
    const watcher = await watchManifests(dir, {
      nodeName,
      clock: new FakeClock(0),
      watchFs: false,
      decoder,
      onChange: (u) => void updates.push(u),
    });
    try {
      failB = true;
      await Deno.writeTextFile(join(dir, "a.yaml"), podYaml("gamma"));
      await watcher.resync();
      const last = updates.at(-1)!;
      assertEquals(last.pods.map((p) => p.metadata.name), ["gamma-node-a", "beta-node-a"]);
      assertEquals(last.errors.map((e) => e.message), [
        `${join(dir, "b.yaml")}: manifest decoder failed: worker died`,
      ]);
    } finally {
      await watcher.stop();
    }
  });
});

Deno.test("openRegularFile looks at a named pipe without waiting for a writer", async () => {
  await withTempDir(async (dir) => {
    const fifo = join(dir, "p.yaml");
    assert((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success);
    const opened = await within("opening the FIFO", openRegularFile(fifo), 5_000);
    assert(opened && !("file" in opened), "a FIFO is not opened for reading");
    assert(opened.info.isFifo);
    await Deno.writeTextFile(join(dir, "a.yaml"), "x: 1\n");
    const regular = await openRegularFile(join(dir, "a.yaml"));
    assert(regular && "file" in regular);
    // Reading the stream to its end closes the file.
    assertEquals(new TextDecoder().decode(await readAll(regular.file)), "x: 1\n");
  });
});

async function readAll(file: Deno.FsFile): Promise<Uint8Array> {
  return new Uint8Array(await new Response(file.readable).arrayBuffer());
}
