/**
 * The layer check run by `deno task check`: every import between packages of `src/` points down
 *
 * ```
 * api  <  util | version | third_party  <  probe | client | cri_client | credentialprovider
 *      <  volume | cri_streaming  <  kubelet | runtime  <  cmd
 * ```
 *
 * Packages on one rank are siblings and import nothing from each other. Inside `kubelet`, a
 * sub-package (`src/kubelet/<dir>/`) does not import the files of package kubelet itself
 * (`src/kubelet/*.ts`), which build it, as Go's pkg/kubelet/<dir> cannot import pkg/kubelet.
 * The imports are read from Deno's own module graph (`deno info --json`), so type-only and
 * dynamic imports count and `@example` code does not.
 * No Go counterpart: Go's compiler refuses import cycles; this writes the intended direction down.
 *
 * Run: `deno run --allow-read --allow-write --allow-run scripts/check_layers.ts [root]`.
 * @module
 */
import { join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * The rank of each package under `src/` (its first path segment; `version.ts` is `version`).
 * An import may go to a lower rank or stay in its own package.
 */
export const layerRanks: Readonly<Record<string, number>> = {
  api: 0,
  util: 1,
  version: 1,
  third_party: 1,
  probe: 2,
  client: 2,
  cri_client: 2,
  credentialprovider: 2,
  // A CRI runtime's streaming server (exec, attach, port-forward): it serves the CRI API's
  // requests (cri_client/api.ts), as k8s.io/cri-streaming imports k8s.io/cri-api.
  cri_streaming: 3,
  // volume plugins read Secrets and ConfigMaps through client and are used by kubelet's
  // volume manager: above client, below kubelet.
  volume: 3,
  kubelet: 4,
  runtime: 4,
  cmd: 5,
};

/** One import of a file by another, as paths relative to the repository root. */
export interface ImportEdge {
  /** The importing file, e.g. `src/cri_client/remote_runtime.ts`. */
  from: string;
  /** The imported file, e.g. `src/util/exec/errors.ts`. */
  to: string;
  /** 1-based line of the import in `from` (0 when unknown). */
  line: number;
}

/** An import the rules refuse, with the rule it breaks. */
export interface LayerViolation extends ImportEdge {
  rule: string;
}

/** An upward import left in place on purpose, and why. */
export interface LayerException {
  from: string;
  to: string;
  reason: string;
}

/** The upward imports left in place, each with its reason. Keep this list short. */
export const layerExceptions: readonly LayerException[] = [
  {
    from: "src/kubelet/server/server.ts",
    to: "src/kubelet/kubelet_pods.ts",
    reason: "validateContainerLogStatus: Go reaches it through HostInterface." +
      "GetKubeletContainerLogs, which would change the server source the tests build",
  },
];

/** The package of a path under `src/` (`kubelet`, `version`, ...), or undefined outside `src/`. */
export function packageOf(path: string): string | undefined {
  const parts = path.split("/");
  if (parts[0] !== "src" || parts.length < 2) return undefined;
  return parts.length === 2 ? parts[1].replace(/\.ts$/, "") : parts[1];
}

/**
 * The rule `edge` breaks, or undefined when it is allowed.
 *
 * @example
 * ```ts
 * checkImport({ from: "src/util/pod/pod.ts", to: "src/client/rest.ts", line: 9 });
 * // "util (rank 1) may not import client (rank 2): imports point down"
 * ```
 */
export function checkImport(edge: ImportEdge): string | undefined {
  const from = packageOf(edge.from);
  const to = packageOf(edge.to);
  if (from === undefined || to === undefined) return undefined;
  if (from === to) return from === "kubelet" ? checkInsideKubelet(edge) : undefined;
  const fromRank = layerRanks[from];
  const toRank = layerRanks[to];
  if (fromRank === undefined) return `src/${from} has no layer: add it to layerRanks`;
  if (toRank === undefined) return `src/${to} has no layer: add it to layerRanks`;
  if (toRank < fromRank) return undefined;
  if (toRank === fromRank) {
    return `${from} may not import ${to}: siblings at rank ${fromRank} stay independent`;
  }
  return `${from} (rank ${fromRank}) may not import ${to} (rank ${toRank}): imports point down`;
}

function checkInsideKubelet(edge: ImportEdge): string | undefined {
  const fromSub = edge.from.split("/").length > 3;
  const toRoot = edge.to.split("/").length === 3;
  if (fromSub && toRoot) {
    return "a kubelet sub-package may not import package kubelet itself (src/kubelet/*.ts)";
  }
  return undefined;
}

/**
 * The edges the rules refuse, less the listed exceptions.
 *
 * @example
 * ```ts
 * checkImports([{ from: "src/cri_client/a.ts", to: "src/probe/b.ts", line: 3 }]).length; // 1
 * ```
 */
export function checkImports(
  edges: readonly ImportEdge[],
  exceptions: readonly LayerException[] = layerExceptions,
): LayerViolation[] {
  const out: LayerViolation[] = [];
  for (const edge of edges) {
    const rule = checkImport(edge);
    if (rule === undefined) continue;
    if (exceptions.some((e) => e.from === edge.from && e.to === edge.to)) continue;
    out.push({ ...edge, rule });
  }
  return out;
}

interface DenoInfoDependency {
  code?: { specifier?: string; span?: { start: { line: number } } };
  type?: { specifier?: string; span?: { start: { line: number } } };
}

interface DenoInfo {
  modules: { specifier: string; dependencies?: DenoInfoDependency[] }[];
}

/**
 * Every import between files under `<root>/src/`, read from `deno info --json` over one
 * temporary module that imports them all.
 *
 * @example
 * ```ts
 * const edges = await collectImports(".");
 * edges.find((e) => e.from === "src/kubelet/kubelet.ts");
 * ```
 */
export async function collectImports(root: string): Promise<ImportEdge[]> {
  const rootDir = resolve(root);
  const files = await listTsFiles(join(rootDir, "src"));
  const entry = await Deno.makeTempFile({ suffix: ".ts" });
  try {
    await Deno.writeTextFile(
      entry,
      files.map((f) => `import ${JSON.stringify(pathToFileURL(f).href)};\n`).join(""),
    );
    const args = ["info", "--json"];
    const config = join(rootDir, "deno.json");
    if (await exists(config)) args.push("--config", config);
    const { success, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [...args, entry],
      cwd: rootDir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!success) throw new Error(`deno info failed: ${new TextDecoder().decode(stderr)}`);
    const info = JSON.parse(new TextDecoder().decode(stdout)) as DenoInfo;
    return edgesOf(info, rootDir);
  } finally {
    await Deno.remove(entry);
  }
}

function edgesOf(info: DenoInfo, rootDir: string): ImportEdge[] {
  const srcPrefix = pathToFileURL(join(rootDir, "src")).href + "/";
  const out: ImportEdge[] = [];
  const seen = new Set<string>();
  for (const module of info.modules) {
    if (!module.specifier.startsWith(srcPrefix)) continue;
    const from = relative(rootDir, fileURLToPath(module.specifier));
    for (const dep of module.dependencies ?? []) {
      for (const resolved of [dep.code, dep.type]) {
        if (!resolved?.specifier?.startsWith(srcPrefix)) continue;
        const to = relative(rootDir, fileURLToPath(resolved.specifier));
        const key = `${from}\n${to}`;
        if (seen.has(key)) continue;
        seen.add(key);
        out.push({ from, to, line: (resolved.span?.start.line ?? -1) + 1 });
      }
    }
  }
  return out;
}

async function listTsFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) out.push(...await listTsFiles(path));
    else if (entry.isFile && entry.name.endsWith(".ts")) out.push(path);
  }
  return out.sort();
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/**
 * The report line of one violation: importing file and line, imported file, rule.
 *
 * @example
 * ```ts
 * formatViolation({ from: "src/util/a.ts", to: "src/kubelet/b.ts", line: 3, rule: "r" });
 * // "src/util/a.ts:3 imports src/kubelet/b.ts: r"
 * ```
 */
export function formatViolation(v: LayerViolation): string {
  return `${v.from}:${v.line} imports ${v.to}: ${v.rule}`;
}

if (import.meta.main) {
  const violations = checkImports(await collectImports(Deno.args[0] ?? "."));
  for (const v of violations) console.error(formatViolation(v));
  if (violations.length > 0) {
    console.error(
      `${violations.length} upward import(s). Move the shared code down, pass it in, or list ` +
        "a reasoned exception in scripts/check_layers.ts (see docs/architecture.md).",
    );
    Deno.exit(1);
  }
}
