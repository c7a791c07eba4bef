/**
 * Static pods from manifest files: reading a file or a folder of manifests into pods, and watching
 * that path so that added, changed and removed files become a new desired set of pods.
 * Mirrors kubelet's pkg/kubelet/config/file.go (with file_linux.go's inotify watch and the
 * periodic re-list), emitting whole sets like kubelet's `SET` pod updates.
 * @module
 */
import { basename, dirname, extname, join } from "node:path";
import type { Pod } from "../../api/core/v1/mod.ts";
import { type Clock, type ClockTimer, RealClock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { decodePodDocuments } from "./common.ts";
import { inlineDecoder, type ManifestDecoder, WorkerDecoder } from "./decoder.ts";
import { type DirectoryWatch, openRegularFile, watchDirectory } from "./file_linux.ts";
import type { FieldError } from "./validation.ts";
import { errorText } from "../../util/errors.ts";

/** File name extensions read from a manifest folder. */
export const manifestExtensions: readonly string[] = [".yaml", ".yml", ".json"];

/**
 * Largest manifest file read, in bytes: 3 MiB, the most the API server accepts in one request
 * body (its `MaxRequestBodyBytes`), so no pod the API could hold is refused. A larger file is
 * refused from its size alone, without reading or parsing it.
 */
export const maxManifestBytes = 3 * 1024 * 1024;

/** kubelet's default `fileCheckFrequency`: how often the manifest path is re-listed. */
export const defaultFileCheckIntervalMs = 20_000;

/**
 * A problem with one manifest file, or one document in it. The message names the file, the
 * document (1-based) and the field:
 * `fixtures/pods/web.yaml: document 2: spec.containers[0].readinessProbe.httpGet.port: 0: must be between 1 and 65535, inclusive`.
 *
 * @example
 * ```ts
 * const e = new ManifestError("web.yaml", { document: 1, field: "metadata.name", detail: "Required value" });
 * e.message; // "web.yaml: document 1: metadata.name: Required value"
 * ```
 */
export class ManifestError extends Error {
  /** The file (or the manifest path itself when it cannot be read). */
  readonly file: string;
  /** 1-based document number, when the problem is inside a document. */
  readonly document?: number;
  /** The field path, when the problem is one field. */
  readonly field?: string;
  /** What is wrong, without the location. */
  readonly detail: string;

  /** Builds the message from the location and the detail. */
  constructor(file: string, options: { document?: number; field?: string; detail: string }) {
    const parts = [file];
    if (options.document !== undefined) parts.push(`document ${options.document}`);
    if (options.field) parts.push(options.field);
    parts.push(options.detail);
    super(parts.join(": "));
    this.name = "ManifestError";
    this.file = file;
    this.document = options.document;
    this.field = options.field || undefined;
    this.detail = options.detail;
  }
}

/** What a manifest path holds right now. */
export interface PodManifests {
  /** Valid pods, in file name order and document order, with defaults and static identity applied. */
  pods: Pod[];
  /** One entry per problem; the pods of other files and documents are unaffected. */
  errors: ManifestError[];
  /** The manifest files that were read. */
  files: string[];
  /**
   * The path exists but could not be read (stat or listing failed for a reason other than its
   * absence): `pods` is empty because nothing is known, not because no pods are wanted.
   */
  unreadable?: boolean;
  /**
   * Files that exist but could not be read or parsed this time (permission denied, a symlink
   * loop, the parser failing): nothing is known about their pods, so a watch keeps the pods it
   * had from them.
   */
  unreadableFiles: string[];
  /** The valid pods of each file that was read. */
  podsByFile: Map<string, Pod[]>;
}

/** Options of {@link loadPodManifests}. */
export interface LoadOptions {
  /** The node the static pods belong to (default: this host's name, lowercased). */
  nodeName?: string;
  /**
   * Where the text is parsed (default: in place; a {@link PodConfigWatcher} defaults to a worker
   * of its own, closed by `stop`).
   */
  decoder?: ManifestDecoder;
  /** Largest file read, in bytes (default {@link maxManifestBytes}). */
  maxBytes?: number;
}

/**
 * The default node name: the host name, lowercased (kubelet's `--hostname-override` default).
 *
 * @example
 * ```ts
 * defaultNodeName(); // e.g. "laptop"
 * ```
 */
export function defaultNodeName(): string {
  return Deno.hostname().toLowerCase();
}

/**
 * Reads static pods from `path`: a single manifest file (any name), or every `.yaml`, `.yml` and
 * `.json` file directly inside a folder (dotfiles and subfolders skipped, names sorted). Each file
 * may hold several documents. Never throws for bad content: problems are returned as errors and
 * the remaining pods are still returned. A missing path yields no pods and one error; a path that
 * exists but cannot be read also yields one error and sets `unreadable`.
 *
 * @example
 * ```ts
 * const { pods, errors } = await loadPodManifests("fixtures/pods/host", { nodeName: "laptop" });
 * for (const e of errors) console.error(e.message);
 * ```
 */
export async function loadPodManifests(
  path: string,
  options: LoadOptions = {},
): Promise<PodManifests> {
  const nodeName = options.nodeName ?? defaultNodeName();
  const decoder = options.decoder ?? inlineDecoder;
  const maxBytes = options.maxBytes ?? maxManifestBytes;
  const root = trimTrailingSeparators(path);
  const result: PodManifests = {
    pods: [],
    errors: [],
    files: [],
    unreadableFiles: [],
    podsByFile: new Map(),
  };

  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(root);
  } catch (e) {
    const missing = e instanceof Deno.errors.NotFound;
    const detail = missing ? "path does not exist" : errorText(e);
    result.errors.push(new ManifestError(root, { detail }));
    if (!missing) result.unreadable = true;
    return result;
  }

  if (info.isFile) {
    result.files.push(root);
  } else if (info.isDirectory) {
    try {
      const listing = await listManifestFiles(root);
      result.files.push(...listing.files);
      result.errors.push(...listing.errors);
      result.unreadableFiles.push(...listing.unreadable);
    } catch (e) {
      result.errors.push(new ManifestError(root, { detail: errorText(e) }));
      result.unreadable = !(e instanceof Deno.errors.NotFound);
      return result;
    }
  } else {
    result.errors.push(new ManifestError(root, { detail: "path is not a directory or file" }));
    return result;
  }

  const seen = new Map<string, string>(); // namespace/name → where it was defined
  const seenUID = new Map<string, string>(); // metadata.uid → where it was defined
  for (const file of result.files) {
    const read = await readManifestFile(file, maxBytes);
    if (read.missing) continue; // removed since the listing
    if (read.error) {
      result.errors.push(read.error);
      if (read.unreadable) result.unreadableFiles.push(file);
      continue;
    }
    let documents;
    try {
      documents = await decoder.decode(read.bytes!, { source: file, nodeName });
    } catch (e) {
      // The parser itself failed (not the content): nothing is known about this file's pods.
      result.errors.push(new ManifestError(file, { detail: errorText(e) }));
      result.unreadableFiles.push(file);
      continue;
    }
    const filePods: Pod[] = [];
    result.podsByFile.set(file, filePods);
    for (const doc of documents) {
      for (const e of doc.errors) result.errors.push(manifestError(file, doc.document, e));
      if (!doc.pod) continue;
      // Two manifests defining the same pod would fight over it (kubelet keeps whichever it read
      // last); refuse the later one and say where the first one is.
      const key = `${doc.pod.metadata.namespace}/${doc.pod.metadata.name}`;
      const first = seen.get(key);
      if (first !== undefined) {
        result.errors.push(
          new ManifestError(file, {
            document: doc.document,
            field: "metadata.name",
            detail: `Duplicate value: pod ${key} is already defined in ${first}`,
          }),
        );
        continue;
      }
      // An explicit metadata.uid shared by two pods would make them one pod to the agent.
      const uid = doc.pod.metadata.uid ?? "";
      const firstUID = seenUID.get(uid);
      if (firstUID !== undefined) {
        result.errors.push(
          new ManifestError(file, {
            document: doc.document,
            field: "metadata.uid",
            detail: `Duplicate value: uid ${JSON.stringify(uid)} is already used in ${firstUID}`,
          }),
        );
        continue;
      }
      seen.set(key, `${file}: document ${doc.document}`);
      seenUID.set(uid, `${file}: document ${doc.document}`);
      result.pods.push(doc.pod);
      filePods.push(doc.pod);
    }
  }
  return result;
}

/**
 * Parses manifest text that did not come from a folder listing (stdin, a test, an HTTP body):
 * the same decoding, validation and defaults as {@link loadPodManifests}, with `file` used for
 * error messages and the UID.
 *
 * @example
 * ```ts
 * declare const text: string;
 *
 * const { pods, errors } = await parsePodManifest(text, { file: "web.yaml", nodeName: "laptop" });
 * ```
 */
export async function parsePodManifest(
  text: string,
  options: { file: string; nodeName?: string },
): Promise<{ pods: Pod[]; errors: ManifestError[] }> {
  const nodeName = options.nodeName ?? defaultNodeName();
  const pods: Pod[] = [];
  const errors: ManifestError[] = [];
  for (const doc of await decodePodDocuments(text, { source: options.file, nodeName })) {
    for (const e of doc.errors) errors.push(manifestError(options.file, doc.document, e));
    if (doc.pod) pods.push(doc.pod);
  }
  return { pods, errors };
}

/** A whole desired set of static pods, like kubelet's `PodUpdate{Op: SET, Source: "file"}`. */
export interface PodUpdate {
  op: "SET";
  source: "file";
  pods: Pod[];
  /** Problems with individual files or documents; their pods are absent from `pods`. */
  errors: ManifestError[];
}

/** Options of {@link watchManifests}. */
export interface WatchOptions extends LoadOptions {
  /** Called with the full set first, then after every change (never twice for the same set). */
  onChange: (update: PodUpdate) => void | Promise<void>;
  /** Called when `onChange` throws or rejects (the watch keeps going). */
  onError?: (error: unknown) => void;
  /** Re-list period (default 20 s, kubelet's file check frequency). */
  intervalMs?: number;
  /** The clock driving the re-list and the debounce (default: the wall clock). */
  clock?: Clock;
  /** Also react to file system notifications (`Deno.watchFs`) between re-lists (default true). */
  watchFs?: boolean;
  /** How long to wait for a burst of notifications to end before re-listing (default 100 ms). */
  debounceMs?: number;
}

/**
 * Watches a manifest path: re-lists it every `intervalMs` on the injected clock and, between
 * re-lists, whenever the file system reports a change. Each listing that differs from the last one
 * is delivered to `onChange` as the full desired set. Bad files never stop the watch; they show up
 * in the update's `errors`. Listings never overlap, and updates are delivered in order.
 *
 * @example
 * ```ts
 * const watcher = new PodConfigWatcher("fixtures/pods/host", {
 *   onChange: (u) => console.log(u.pods.map((p) => p.metadata.name), u.errors.length),
 * });
 * await watcher.start();
 * // ...
 * await watcher.stop();
 * ```
 */
export class PodConfigWatcher {
  readonly path: string;
  #options: WatchOptions;
  #clock: Clock;
  #intervalMs: number;
  #debounceMs: number;
  #nodeName: string;
  #last: PodUpdate | undefined;
  #lastKey: string | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #started = false;
  #relistTimer: ClockTimer | undefined;
  #debounceTimer: ClockTimer | undefined;
  #fsWatcher: Deno.FsWatcher | DirectoryWatch | undefined;
  #fsLoop: Promise<void> | undefined;
  #decoder: ManifestDecoder;
  #ownDecoder: boolean;
  /** The pods each file gave in the last set (kept while that file cannot be read). */
  #lastByFile = new Map<string, Pod[]>();

  /** Creates a watcher; nothing happens until {@link start}. */
  constructor(path: string, options: WatchOptions) {
    this.path = trimTrailingSeparators(path);
    this.#options = options;
    this.#clock = options.clock ?? new RealClock();
    this.#intervalMs = options.intervalMs ?? defaultFileCheckIntervalMs;
    this.#debounceMs = options.debounceMs ?? 100;
    this.#nodeName = options.nodeName ?? defaultNodeName();
    // Parsing happens in a worker unless the caller brings a decoder: a large manifest must not
    // hold up the probes running on this thread.
    this.#ownDecoder = options.decoder === undefined;
    this.#decoder = options.decoder ?? new WorkerDecoder();
  }

  /** The last set delivered to `onChange`. */
  get current(): PodUpdate | undefined {
    return this.#last;
  }

  /** Lists the path, delivers the first set and starts watching; resolves once delivered. */
  async start(): Promise<void> {
    if (this.#started) throw new Error("PodConfigWatcher already started");
    this.#started = true;
    await this.resync();
  }

  /**
   * Re-lists the path now (as a notification or the periodic timer would). If a listing is in
   * progress another one follows it; the promise resolves when the path has been listed after
   * this call.
   */
  resync(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = this.#relistLoop().finally(() => this.#running = undefined);
    return this.#running;
  }

  /** Resolves when no listing is in progress (lets tests wait for a clock-triggered re-list). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  /** Stops the timers and the file system watch; waits for a listing in progress to finish. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#relistTimer?.stop();
    this.#debounceTimer?.stop();
    const closing = this.#closeFsWatcher();
    await this.idle();
    await closing;
    await this.#fsLoop;
    if (this.#ownDecoder) this.#decoder.close();
  }

  async #relistLoop(): Promise<void> {
    do {
      this.#again = false;
      this.#relistTimer?.stop();
      await this.#relist();
    } while (this.#again && !this.#stopped);
    if (this.#stopped) return;
    // Like wait.Forever: the next periodic listing is one period after this one finished.
    this.#relistTimer = this.#clock.afterFunc(this.#intervalMs, () => void this.resync());
    if (this.#options.watchFs !== false && !this.#fsWatcher) this.#startFsWatcher();
  }

  async #relist(): Promise<void> {
    const listed = await loadPodManifests(this.path, {
      nodeName: this.#nodeName,
      decoder: this.#decoder,
      maxBytes: this.#options.maxBytes,
    });
    if (this.#stopped) return;
    // Like Go's listConfig: only a missing path means "no pods"; a path that cannot be read
    // keeps the current pods (the error is reported with them). The same holds for one file.
    let pods = listed.pods;
    const byFile = listed.podsByFile;
    if (listed.unreadable) {
      pods = this.#last?.pods ?? [];
    } else if (listed.unreadableFiles.length > 0) {
      pods = [...pods];
      const uids = new Set(pods.map((p) => p.metadata.uid));
      for (const file of listed.unreadableFiles) {
        const kept = (this.#lastByFile.get(file) ?? []).filter((p) => !uids.has(p.metadata.uid));
        if (kept.length === 0) continue;
        log.info("Keeping the pods of a manifest file that cannot be read", {
          path: file,
          pods: kept.map((p) => `${p.metadata.namespace}/${p.metadata.name}`),
        });
        pods.push(...kept);
        byFile.set(file, kept);
      }
    }
    if (!listed.unreadable) this.#lastByFile = byFile;
    const update: PodUpdate = { op: "SET", source: "file", pods, errors: listed.errors };
    const key = JSON.stringify([update.pods, update.errors.map((e) => e.message)]);
    if (key === this.#lastKey) return;
    this.#lastKey = key;
    this.#last = update;
    try {
      await this.#options.onChange(update);
    } catch (e) {
      this.#options.onError?.(e);
    }
  }

  // Watches the folder (or, for a single file, the folder holding it, so that an editor replacing
  // the file does not end the watch). A path that does not exist yet is picked up by the re-list.
  #startFsWatcher(): void {
    let watched: string;
    let isDir: boolean;
    try {
      isDir = Deno.statSync(this.path).isDirectory;
      watched = isDir ? this.path : dirname(this.path);
    } catch {
      return;
    }
    const target = basename(this.path);
    const relevant = (name: string) => isDir ? !name.startsWith(".") : name === target;
    const changed = () => {
      this.#debounceTimer?.stop();
      this.#debounceTimer = this.#clock.afterFunc(this.#debounceMs, () => void this.resync());
    };
    try {
      // inotify where possible: Deno.watchFs opens created files, and a FIFO blocks it forever.
      const watch = watchDirectory(watched, {
        onChange: (names) => {
          if (names.length === 0 || names.some(relevant)) changed();
        },
        // The watched folder went away; the periodic re-list restarts the watch when it is back.
        onGone: () => {
          if (this.#fsWatcher === watch) this.#fsWatcher = undefined;
        },
      });
      if (watch) {
        this.#fsWatcher = watch;
        return;
      }
      this.#fsWatcher = Deno.watchFs(watched, { recursive: false });
    } catch {
      return;
    }
    const watcher = this.#fsWatcher;
    this.#fsLoop = (async () => {
      try {
        for await (const event of watcher) {
          if (event.kind === "access" || !event.paths.some((p) => relevant(basename(p)))) continue;
          changed();
        }
      } catch {
        // The watched folder went away; the periodic re-list restarts the watch when it is back.
      } finally {
        if (this.#fsWatcher === watcher) this.#fsWatcher = undefined;
      }
    })();
  }

  async #closeFsWatcher(): Promise<void> {
    const watcher = this.#fsWatcher;
    this.#fsWatcher = undefined;
    try {
      await watcher?.close();
    } catch {
      // already closed
    }
  }
}

/**
 * Starts a {@link PodConfigWatcher} on `path` and resolves once the first set was delivered.
 *
 * @example
 * ```ts
 * const watcher = await watchManifests("/etc/probelet/pods", {
 *   nodeName: "laptop",
 *   onChange: ({ pods, errors }) => console.log(pods.length, errors.length),
 * });
 * await watcher.stop();
 * ```
 */
export async function watchManifests(
  path: string,
  options: WatchOptions,
): Promise<PodConfigWatcher> {
  const watcher = new PodConfigWatcher(path, options);
  await watcher.start();
  return watcher;
}

interface Listing {
  /** Regular files to read (symlinks followed). */
  files: string[];
  /** Entries that are not readable manifests, each logged by kubelet too. */
  errors: ManifestError[];
  /** Entries that exist but cannot be examined: their pods are kept. */
  unreadable: string[];
}

async function listManifestFiles(dir: string): Promise<Listing> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name.startsWith(".")) continue;
    if (!manifestExtensions.includes(extname(entry.name).toLowerCase())) continue;
    names.push(entry.name);
  }
  names.sort();
  const listing: Listing = { files: [], errors: [], unreadable: [] };
  for (const name of names) {
    const file = join(dir, name);
    let info: Deno.FileInfo;
    try {
      // Follows symlinks; only the type is looked at, the file is not opened.
      info = await Deno.stat(file);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) {
        // A symlink loop, a permission problem: the file may still hold pods.
        listing.errors.push(new ManifestError(file, { detail: `cannot stat: ${errorText(e)}` }));
        listing.unreadable.push(file);
      } else if (await isSymlink(file)) {
        // The target is gone, which is what removing the file means.
        const target = await Deno.readLink(file).catch(() => "?");
        listing.errors.push(
          new ManifestError(file, { detail: `dangling symlink: target ${target} does not exist` }),
        );
      } // else removed since the listing
      continue;
    }
    if (info.isFile) listing.files.push(file);
    else if (info.isDirectory) {
      listing.errors.push(
        new ManifestError(file, {
          detail: "is a directory; manifest folders are not recursed into",
        }),
      );
    } else {
      // A FIFO, socket or device: never opened (reading a FIFO blocks until a writer comes).
      listing.errors.push(
        new ManifestError(file, { detail: `not a regular file (${fileType(info)}); not read` }),
      );
    }
  }
  return listing;
}

async function isSymlink(path: string): Promise<boolean> {
  try {
    return (await Deno.lstat(path)).isSymlink;
  } catch {
    return false;
  }
}

function fileType(info: Deno.FileInfo): string {
  if (info.isFifo) return "named pipe";
  if (info.isSocket) return "socket";
  if (info.isCharDevice) return "character device";
  if (info.isBlockDevice) return "block device";
  return "unknown type";
}

/** One manifest file's bytes, or why they are not there. */
interface ReadResult {
  bytes?: Uint8Array<ArrayBuffer>;
  /** The file vanished since it was listed. */
  missing?: boolean;
  error?: ManifestError;
  /** The file exists but could not be read: its pods are kept. */
  unreadable?: boolean;
}

/**
 * Reads at most `maxBytes` of a regular file. The size is checked before anything is read, and
 * again while reading (the file may grow in between); a file over the limit is refused whole.
 */
async function readManifestFile(file: string, maxBytes: number): Promise<ReadResult> {
  const tooLarge = (size: string) =>
    new ManifestError(file, {
      detail: `file is ${size} bytes, more than the ${maxBytes}-byte limit of a manifest; ` +
        `not parsed`,
    });
  let handle: Deno.FsFile | undefined;
  try {
    // The type is checked on what was opened (never blocking on a FIFO put there meanwhile).
    const opened = await openRegularFile(file);
    if (opened && "file" in opened) handle = opened.file;
    const info = opened?.info ?? await Deno.stat(file);
    if (!info.isFile) {
      return { error: new ManifestError(file, { detail: `not a regular file; not read` }) };
    }
    if (info.size > maxBytes) return { error: tooLarge(String(info.size)) };
    handle ??= await Deno.open(file, { read: true });
    const chunks: Uint8Array[] = [];
    let length = 0;
    while (length <= maxBytes) {
      const chunk = new Uint8Array(Math.min(64 * 1024, maxBytes + 1 - length));
      const n = await handle.read(chunk);
      if (n === null) break;
      chunks.push(chunk.subarray(0, n));
      length += n;
    }
    if (length > maxBytes) return { error: tooLarge(`more than ${maxBytes}`) };
    const bytes = new Uint8Array(length);
    let offset = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, offset);
      offset += chunk.length;
    }
    return { bytes };
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { missing: true };
    return { error: new ManifestError(file, { detail: errorText(e) }), unreadable: true };
  } finally {
    handle?.close();
  }
}

function manifestError(file: string, document: number, e: FieldError): ManifestError {
  return new ManifestError(file, { document, field: e.field, detail: e.detail });
}

function trimTrailingSeparators(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  return trimmed === "" ? path : trimmed;
}
