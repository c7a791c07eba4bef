/**
 * The agent's static module graph leaves out the npm packages only some nodes need: each costs
 * resident memory for good once loaded (docs/benchmarks/memory.md). grpc-js and its proto loader
 * serve only test targets (the gRPC probe frames its messages itself; the CRI client's codec is
 * generated, scripts/gen_cri_codec.ts, so protobufjs serves only that script and tests), and
 * `@peculiar/x509` is loaded by the first call that makes or reads a certificate. The Prometheus
 * metrics are probelet's own (src/util/prometheus/), not the npm prom-client package, and no
 * `node:http*` module is loaded at start, nor `yaml` (kubeconfigs are read by src/util/block_yaml.ts
 * and manifests decoded after an `import()`). The embedded runtime (with its streaming server and
 * `node:zlib`) is loaded only by a node that runs without a CRI endpoint.
 * @module
 */
import assert from "node:assert/strict";

const main = new URL("../../../src/cmd/probelet/main.ts", import.meta.url);

/**
 * The npm packages and `node:` modules `deno info` finds imported (as code, not `import()`) from
 * `entry`, by name.
 */
async function staticGraph(entry: URL): Promise<{ packages: Set<string>; files: Set<string> }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry.pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: {
      specifier: string;
      dependencies?: { specifier: string; code?: { specifier?: string }; isDynamic?: boolean }[];
    }[];
  };
  const byName = new Map(info.modules.map((m) => [m.specifier, m]));
  const packages = new Set<string>();
  const files = new Set<string>();
  // Walked from the entry: a module only `import()`ed is not loaded at start, nor what it imports.
  const pending = [entry.href];
  while (pending.length > 0) {
    const specifier = pending.pop()!;
    const m = byName.get(specifier);
    if (!m || files.has(specifier)) continue;
    files.add(specifier);
    for (const dep of m.dependencies ?? []) {
      // `import()` and type-only imports load nothing at start.
      if (dep.isDynamic || !dep.code) continue;
      const s = dep.specifier;
      if (!s.startsWith(".") && !s.startsWith("file:")) packages.add(s);
      const resolved = dep.code.specifier;
      if (resolved?.startsWith("file:")) pending.push(resolved);
    }
  }
  return { packages, files };
}

Deno.test("probelet's static module graph", async (t) => {
  const { packages, files } = await staticGraph(main);
  const names = [
    "@grpc/grpc-js",
    "@grpc/proto-loader",
    "protobufjs",
    "@peculiar/x509",
    "reflect-metadata",
    "prom-client",
    // ≈6 MiB with Deno's npm and CommonJS machinery: loaded by the first manifest decoded and by
    // a kubeconfig outside parseBlockYaml's subset, never at start.
    "yaml",
    // Each node: module costs RSS of its own over the Node compatibility layer's shared part:
    // node:http 0.5 MiB for a status-text table (now src/util/http_status.ts); the agent's
    // HTTP/2 is src/util/h2/, not node:http2.
    "node:http",
    "node:http2",
    "node:https",
  ];
  for (const name of names) {
    await t.step(`does not import ${name}`, () => {
      // By its import-map name, a subpath (`protobufjs/minimal`) or an `npm:` specifier.
      const found = [...packages].filter((s) =>
        s === name || s.startsWith(`${name}/`) || s.startsWith(`npm:${name}@`) ||
        s === `npm:${name}` || s.startsWith(`npm:${name}/`)
      );
      assert.deepEqual(found, [], `${name} is imported statically: ${[...packages]}`);
    });
  }
  await t.step("does not load the embedded runtime nor node:zlib", () => {
    const src = new URL("../../../src/", import.meta.url).href;
    const embedded = [...files].filter((f) =>
      f.startsWith(`${src}runtime/embedded/`) || f.startsWith(`${src}cri_streaming/`)
    );
    assert.deepEqual(embedded, []);
    assert.ok(!packages.has("node:zlib"), [...packages].join(", "));
  });
  await t.step("still imports what every node uses", () => {
    // A check that the graph was read at all.
    assert.ok(packages.has("node:crypto"), [...packages].join(", "));
    assert.ok(
      [...files].some((f) => f.endsWith("/src/kubelet/prober/prober_manager.ts")),
      "the prober is in the graph",
    );
  });
});
