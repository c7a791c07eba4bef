/**
 * The layer check (scripts/check_layers.ts): which import directions it refuses, that a violating
 * pair in a real tree makes the script fail with the importing file, the imported file and the
 * rule, and that this repository passes with only still-needed exceptions.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  checkImport,
  checkImports,
  collectImports,
  formatViolation,
  layerExceptions,
} from "../../scripts/check_layers.ts";

const repoRoot = new URL("../..", import.meta.url).pathname;

Deno.test("TestCheckImport", async (t) => {
  const cases: { from: string; to: string; refused: boolean }[] = [
    { from: "src/cri_client/remote_runtime.ts", to: "src/util/exec/errors.ts", refused: false },
    { from: "src/cri_client/remote_runtime.ts", to: "src/probe/exec/errors.ts", refused: true },
    { from: "src/util/pod/pod.ts", to: "src/client/kubernetes/clientset.ts", refused: true },
    { from: "src/probe/exec/host_runner.ts", to: "src/kubelet/container/x.ts", refused: true },
    { from: "src/probe/grpc/grpc.ts", to: "src/version.ts", refused: false },
    { from: "src/volume/secret/secret.ts", to: "src/client/errors.ts", refused: false },
    { from: "src/kubelet/kubelet.ts", to: "src/volume/volume.ts", refused: false },
    { from: "src/volume/volume.ts", to: "src/kubelet/kubelet.ts", refused: true },
    {
      from: "src/runtime/embedded/runtime.ts",
      to: "src/probe/exec/host_runner.ts",
      refused: false,
    },
    { from: "src/runtime/embedded/runtime.ts", to: "src/kubelet/container/ref.ts", refused: true },
    { from: "src/kubelet/kubelet.ts", to: "src/runtime/embedded/mod.ts", refused: true },
    { from: "src/cmd/probelet/app.ts", to: "src/runtime/embedded/mod.ts", refused: false },
    { from: "src/kubelet/kubelet.ts", to: "src/kubelet/server/server.ts", refused: false },
    { from: "src/kubelet/server/server.ts", to: "src/kubelet/kubelet.ts", refused: true },
    { from: "src/kubelet/pleg/generic.ts", to: "src/kubelet/container/runtime.ts", refused: false },
    { from: "src/newpkg/a.ts", to: "src/util/log.ts", refused: true },
    { from: "tests/kubelet/kubelet_test.ts", to: "src/cmd/probelet/app.ts", refused: false },
  ];
  for (const c of cases) {
    await t.step(`${c.from} -> ${c.to}: ${c.refused ? "refused" : "allowed"}`, () => {
      const rule = checkImport({ from: c.from, to: c.to, line: 1 });
      assert.equal(rule !== undefined, c.refused, rule ?? "allowed");
    });
  }
});

Deno.test("TestCheckImportsHonoursExceptions", () => {
  const edge = { from: "src/util/a.ts", to: "src/client/b.ts", line: 4 };
  assert.deepEqual(checkImports([edge], []), [
    { ...edge, rule: "util (rank 1) may not import client (rank 2): imports point down" },
  ]);
  assert.deepEqual(checkImports([edge], [{ ...edge, reason: "test" }]), []);
});

Deno.test("TestCheckLayersFailsOnAViolatingPair", async () => {
  const root = await Deno.makeTempDir();
  try {
    await Deno.mkdir(join(root, "src/util"), { recursive: true });
    await Deno.mkdir(join(root, "src/kubelet"), { recursive: true });
    await Deno.writeTextFile(
      join(root, "src/util/a.ts"),
      [
        '/** @example\n * ```ts\n * import { x } from "../cmd/c.ts";\n * ```\n */',
        'import type { B } from "../kubelet/b.ts";',
        "export type A = B;",
      ].join("\n"),
    );
    await Deno.writeTextFile(join(root, "src/kubelet/b.ts"), "export type B = number;\n");

    const edges = await collectImports(root);
    assert.deepEqual(edges, [{ from: "src/util/a.ts", to: "src/kubelet/b.ts", line: 6 }]);

    const { code, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-read",
        "--allow-write",
        "--allow-run",
        join(repoRoot, "scripts/check_layers.ts"),
        root,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.equal(code, 1);
    assert.match(
      new TextDecoder().decode(stderr),
      /^src\/util\/a\.ts:6 imports src\/kubelet\/b\.ts: util \(rank 1\) may not import kubelet \(rank 4\): imports point down$/m,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("TestRepositoryFollowsTheLayers", async () => {
  const edges = await collectImports(repoRoot);
  assert.deepEqual(checkImports(edges).map(formatViolation), []);
  for (const exception of layerExceptions) {
    const edge = edges.find((e) => e.from === exception.from && e.to === exception.to);
    assert.ok(edge, `stale exception: ${exception.from} no longer imports ${exception.to}`);
    assert.ok(checkImport(edge), `needless exception: ${exception.from} -> ${exception.to}`);
  }
});
