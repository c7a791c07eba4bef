/**
 * The atomic writer of configMap, secret, downwardAPI and projected volumes: a payload of files is
 * written into a fresh timestamped folder, and the `..data` symlink is swapped to it by a rename,
 * so a reader of the volume sees either the old set of files or the new one, never a mix.
 *
 * Layout of a target folder after a write of `podName` and `user/labels`:
 * ```
 * <target>/..2026_11_27_04_05_06.123456  the files
 * <target>/..data -> ..2026_11_27_04_05_06.123456
 * <target>/podName -> ..data/podName
 * <target>/user -> ..data/user
 * ```
 * Mirrors kubelet's pkg/volume/util/atomic_writer.go (AtomicWriter, FileProjection, Write,
 * validatePayload, validatePath, shouldWritePayload, pathsToRemove, newTimestampDir,
 * writePayloadToDir, createUserVisibleFiles, removeUserVisiblePaths).
 * @module
 */
import { basename, dirname, join, normalize } from "node:path";
import * as log from "../../util/log.ts";

/** The longest file name a payload may hold (kubelet's `maxFileNameLength`). */
export const maxFileNameLength = 255;
/** The longest path a payload may hold (kubelet's `maxPathLength`). */
export const maxPathLength = 4096;
/** The symlink to the current timestamped folder (kubelet's `dataDirName`). */
export const dataDirName = "..data";
/** The symlink renamed over `..data` (kubelet's `newDataDirName`). */
export const newDataDirName = "..data_tmp";

/** One file of a payload: its content, its mode and its owner (kubelet's `FileProjection`). */
export interface FileProjection {
  data: Uint8Array;
  /** Permission bits, e.g. 0o644. */
  mode: number;
  /** The file's owner uid (a projected service-account token's `runAsUser`), if any. */
  fsUser?: number;
}

/**
 * Sets permissions on the new timestamped folder (kubelet's fsGroup ownership hook); `subPath` is
 * the folder's name inside the target.
 */
export type SetPerms = (subPath: string) => Promise<void>;

/**
 * Writes payloads into one target folder atomically (kubelet's `AtomicWriter`).
 *
 * @example
 * ```ts
 * const writer = new AtomicWriter("/var/lib/probelet/pods/uid/volumes/kubernetes.io~configmap/cfg", "configmap");
 * await writer.write({ "app.conf": { data: new TextEncoder().encode("a=1\n"), mode: 0o644 } });
 * ```
 */
export class AtomicWriter {
  /** The folder the volume's files appear in. */
  readonly targetDir: string;
  /** What the writes are for, in log lines (`configmap volume cfg`). */
  readonly logContext: string;

  /** A writer for `targetDir`, which must exist. */
  constructor(targetDir: string, logContext: string) {
    this.targetDir = targetDir;
    this.logContext = logContext;
  }

  /**
   * Writes `payload` (paths relative to the target) so that a reader sees all of it or none of
   * it; files of the previous payload that are not in this one disappear. Nothing is written when
   * every file already has this content and none is to be removed.
   */
  async write(payload: Record<string, FileProjection>, setPerms?: SetPerms): Promise<void> {
    // (1) validate the payload and clean its paths.
    let cleanPayload: Map<string, FileProjection>;
    try {
      cleanPayload = validatePayload(payload);
    } catch (e) {
      log.error(e, "Invalid payload", { logContext: this.logContext });
      throw e;
    }
    // (2) the current timestamped folder, if any.
    const dataDirPath = join(this.targetDir, dataDirName);
    let oldTsDir = "";
    try {
      oldTsDir = await Deno.readLink(dataDirPath);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) {
        log.error(e, "Error reading link for data directory", { logContext: this.logContext });
        throw e;
      }
    }
    const oldTsPath = join(this.targetDir, oldTsDir);
    let toRemove = new Set<string>();
    if (oldTsDir !== "") {
      // (3) user-visible paths the new payload no longer has.
      toRemove = await this.pathsToRemove(cleanPayload, oldTsPath);
      // (4) nothing to do when every file is unchanged and none goes away.
      if (!(await shouldWritePayload(cleanPayload, oldTsPath)) && toRemove.size === 0) {
        log.V(4).info("No update required for target directory", {
          logContext: this.logContext,
          targetDir: this.targetDir,
        });
        return;
      }
      log.V(4).info("Write required for target directory", {
        logContext: this.logContext,
        targetDir: this.targetDir,
      });
    }
    // (5) a new timestamped folder, (6) the payload in it, (7) its permissions.
    const tsDir = await this.newTimestampDir();
    const tsDirName = basename(tsDir);
    try {
      await this.writePayloadToDir(cleanPayload, tsDir);
      if (setPerms) await setPerms(tsDirName);
    } catch (e) {
      await Deno.remove(tsDir, { recursive: true }).catch(() => {});
      log.error(e, "Error writing payload to ts data directory", {
        logContext: this.logContext,
        tsDir,
      });
      throw e;
    }
    // (8) the user-visible symlinks into `..data`.
    await this.createUserVisibleFiles(cleanPayload);
    // (9) `..data_tmp` → the new folder, renamed over `..data`: the atomic step.
    const newDataDirPath = join(this.targetDir, newDataDirName);
    await Deno.remove(newDataDirPath).catch(() => {});
    try {
      await Deno.symlink(tsDirName, newDataDirPath);
    } catch (e) {
      await Deno.remove(tsDir, { recursive: true }).catch(() => {});
      log.error(e, "Error creating symbolic link for atomic update", {
        logContext: this.logContext,
      });
      throw e;
    }
    try {
      await Deno.rename(newDataDirPath, dataDirPath);
    } catch (e) {
      await Deno.remove(newDataDirPath).catch(() => {});
      await Deno.remove(tsDir, { recursive: true }).catch(() => {});
      log.error(e, "Error renaming symbolic link for data directory", {
        logContext: this.logContext,
        newDataDirPath,
      });
      throw e;
    }
    // (10) the old user-visible paths, (11) the old timestamped folder.
    await this.removeUserVisiblePaths(toRemove);
    if (oldTsDir !== "") await Deno.remove(oldTsPath, { recursive: true });
  }

  /** The paths under `oldTsDir` that no file of `payload` (nor a folder holding one) keeps. */
  async pathsToRemove(
    payload: Map<string, FileProjection>,
    oldTsDir: string,
  ): Promise<Set<string>> {
    const paths = new Set<string>();
    const walk = async (dir: string, prefix: string) => {
      for await (const entry of Deno.readDir(dir)) {
        const rel = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
        paths.add(rel);
        if (entry.isDirectory) await walk(join(dir, entry.name), rel);
      }
    };
    try {
      await walk(oldTsDir, "");
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return new Set();
      throw e;
    }
    const newPaths = new Set<string>();
    for (const file of payload.keys()) {
      for (let sub = file; sub !== "" && sub !== "."; sub = dirname(sub)) newPaths.add(sub);
    }
    return new Set([...paths].filter((p) => !newPaths.has(p)));
  }

  /** A new folder `..<UTC timestamp>.<random>` in the target, mode 0755 whatever the umask. */
  async newTimestampDir(): Promise<string> {
    const tsDir = await Deno.makeTempDir({ dir: this.targetDir, prefix: timestampPrefix() });
    await Deno.chmod(tsDir, 0o755);
    return tsDir;
  }

  /** Writes each file of `payload` under `dir` with its mode (chmod'ed past the umask) and owner. */
  async writePayloadToDir(payload: Map<string, FileProjection>, dir: string): Promise<void> {
    for (const [path, file] of payload) {
      const fullPath = join(dir, path);
      await Deno.mkdir(dirname(fullPath), { recursive: true, mode: 0o777 });
      await Deno.writeFile(fullPath, file.data, { mode: file.mode });
      await Deno.chmod(fullPath, file.mode);
      if (file.fsUser !== undefined) await Deno.chown(fullPath, file.fsUser, null);
    }
  }

  /** For each first path element of the payload, `<target>/<element> -> ..data/<element>`. */
  async createUserVisibleFiles(payload: Map<string, FileProjection>): Promise<void> {
    for (const path of payload.keys()) {
      const linkName = path.split("/")[0];
      const visible = join(this.targetDir, linkName);
      try {
        await Deno.readLink(visible);
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) continue;
        await Deno.symlink(join(dataDirName, linkName), visible);
      }
    }
  }

  /** Removes the top-level symlinks among `paths` (nested paths went with the old folder). */
  async removeUserVisiblePaths(paths: Set<string>): Promise<void> {
    let lastError: unknown;
    for (const p of paths) {
      if (p.includes("/")) continue;
      try {
        await Deno.remove(join(this.targetDir, p));
      } catch (e) {
        log.error(e, "Error pruning old user-visible path", {
          logContext: this.logContext,
          path: p,
        });
        lastError = e;
      }
    }
    if (lastError) throw lastError;
  }
}

// Go's `time.Now().UTC().Format("..2006_01_02_15_04_05.")`.
function timestampPrefix(now = new Date()): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `..${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_` +
    `${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}.`;
}

/**
 * The payload with each path validated ({@linkcode validatePath}) and cleaned (`a//b` → `a/b`).
 * Throws on the first invalid path.
 */
export function validatePayload(
  payload: Record<string, FileProjection>,
): Map<string, FileProjection> {
  const clean = new Map<string, FileProjection>();
  for (const [path, file] of Object.entries(payload)) {
    validatePath(path);
    clean.set(cleanPath(path), file);
  }
  return clean;
}

// Go's filepath.Clean for a relative path.
function cleanPath(path: string): string {
  const n = normalize(path);
  return n.length > 1 && n.endsWith("/") ? n.slice(0, -1) : n;
}

/**
 * Throws kubelet's error for a payload path that is empty, absolute, longer than 4096 characters,
 * holds a `..` element or a file name longer than 255 characters, or starts with `..`.
 *
 * @example
 * ```ts
 * validatePath("foo/bar"); // ok
 * validatePath("../foo"); // throws "invalid path: must not contain '..': ../foo"
 * ```
 */
export function validatePath(targetPath: string): void {
  if (targetPath === "") throw new Error(`invalid path: must not be empty: ""`);
  if (targetPath.startsWith("/")) {
    throw new Error(`invalid path: must be relative path: ${targetPath}`);
  }
  if (targetPath.length > maxPathLength) {
    throw new Error(`invalid path: must be less than or equal to ${maxPathLength} characters`);
  }
  const items = targetPath.split("/");
  for (const item of items) {
    if (item === "..") throw new Error(`invalid path: must not contain '..': ${targetPath}`);
    if (item.length > maxFileNameLength) {
      throw new Error(
        `invalid path: filenames must be less than or equal to ${maxFileNameLength} characters`,
      );
    }
  }
  if (items[0].startsWith("..") && items[0].length > 2) {
    throw new Error(`invalid path: must not start with '..': ${targetPath}`);
  }
}

/** Whether any file of `payload` is missing under `oldTsDir` or has other content there. */
export async function shouldWritePayload(
  payload: Map<string, FileProjection>,
  oldTsDir: string,
): Promise<boolean> {
  for (const [path, file] of payload) {
    if (await shouldWriteFile(join(oldTsDir, path), file.data)) return true;
  }
  return false;
}

async function shouldWriteFile(path: string, content: Uint8Array): Promise<boolean> {
  let onDisk: Uint8Array;
  try {
    await Deno.lstat(path);
    onDisk = await Deno.readFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return true;
    throw e;
  }
  if (onDisk.length !== content.length) return true;
  return onDisk.some((b, i) => b !== content[i]);
}
