/**
 * Rotation of the logs a CRI runtime writes for this node's containers, as kubelet's container log
 * manager does: every monitor interval the running containers are queued; a worker renames a log
 * past `--container-log-max-size` to `<log>.<YYYYMMDD-hhmmss>` and asks the runtime to reopen the
 * log (CRI `ReopenContainerLog`); older rotated files are gzipped and at most
 * `--container-log-max-files` files are kept per container. `clean` removes a container's logs
 * before the container is removed. The embedded runtime rotates in its shims instead.
 * Mirrors pkg/kubelet/logs/container_log_manager.go.
 * @module
 */
import { basename, dirname, join } from "node:path";
import type { RuntimeService } from "../../cri_client/runtime_service.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { jitterUntil } from "../../util/wait/wait.ts";
import { errorText } from "../../util/errors.ts";

const compressSuffix = ".gz";
const tmpSuffix = ".tmp";

/** The part of the runtime the log manager calls. */
export type LogRuntime = Pick<RuntimeService, "listContainers" | "containerStatus"> & {
  reopenContainerLog(containerId: string): Promise<void>;
};

/** How logs are rotated (kubelet's `LogRotatePolicy`). */
export interface LogRotatePolicy {
  /** A log at least this big is rotated; negative disables rotation. */
  maxSizeBytes: number;
  /** Files kept per container: the live log, the newest rotated one, and gzipped older ones. */
  maxFiles: number;
}

/** Options of {@linkcode ContainerLogManager}. */
export interface ContainerLogManagerOptions extends LogRotatePolicy {
  runtime: LogRuntime;
  clock: Clock;
  /** Only containers with these labels are rotated (this node's, on a shared runtime). */
  labelSelector?: Record<string, string>;
  /** Containers rotated at once (`--container-log-max-workers`, default 1). */
  maxWorkers?: number;
  /** How often running containers are checked (`--container-log-monitor-interval`, 10 s). */
  monitorIntervalMs?: number;
}

/**
 * Kubelet's ContainerLogManager for a CRI runtime.
 *
 * @example
 * ```ts
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const runtime: ContainerLogManagerOptions["runtime"];
 * declare const clock: Clock;
 * declare const containerId: string;
 *
 * const logs = newContainerLogManager({ runtime, clock, maxSizeBytes: 10 << 20, maxFiles: 5 })!;
 * logs.start();
 * await logs.clean(containerId); // before RemoveContainer
 * await logs.stop();
 * ```
 */
export class ContainerLogManager {
  readonly #o: Required<Omit<ContainerLogManagerOptions, "labelSelector">> & {
    labelSelector?: Record<string, string>;
  };
  // Kubelet's workqueue: an ID is queued once; one being processed may be queued again.
  readonly #queue: string[] = [];
  readonly #queued = new Set<string>();
  #wake?: () => void;
  #busy = 0;
  #idle: (() => void)[] = [];
  readonly #stop = new AbortController();
  #loops: Promise<void>[] = [];
  // rotateLogs and clean take turns, as under kubelet's mutex.
  #lock: Promise<void> = Promise.resolve();

  constructor(options: ContainerLogManagerOptions) {
    if (options.maxFiles <= 1) {
      throw new Error(`invalid MaxFiles ${options.maxFiles}, must be > 1`);
    }
    this.#o = { maxWorkers: 1, monitorIntervalMs: 10_000, ...options };
  }

  /** Starts the workers and the periodic check. */
  start(): void {
    if (this.#loops.length > 0) return;
    log.info("Initializing container log rotate workers", {
      workers: this.#o.maxWorkers,
      monitorPeriod: `${this.#o.monitorIntervalMs / 1000}s`,
    });
    for (let i = 0; i < this.#o.maxWorkers; i++) this.#loops.push(this.#processQueueItems(i + 1));
    this.#loops.push(jitterUntil(
      async () => {
        try {
          await this.rotateLogs();
        } catch (e) {
          log.error(e, "Failed to rotate container logs");
        }
      },
      this.#o.monitorIntervalMs,
      0,
      true,
      { clock: this.#o.clock, signal: this.#stop.signal },
    ));
  }

  /** Stops the periodic check and the workers once their current container is done. */
  async stop(): Promise<void> {
    this.#stop.abort();
    this.#wake?.();
    await Promise.all(this.#loops);
  }

  /** Resolves once the check in progress and every container it queued were processed. */
  async flush(): Promise<void> {
    await this.#lock;
    while (this.#queue.length > 0 || this.#busy > 0) {
      await new Promise<void>((resolve) => this.#idle.push(resolve));
    }
  }

  /** Queues every running container (one pass of the periodic check). */
  rotateLogs(): Promise<void> {
    return this.#withLock(async () => {
      log.V(4).info("Starting container log rotation sequence");
      const containers = await this.#o.runtime.listContainers(
        this.#o.labelSelector ? { labelSelector: this.#o.labelSelector } : undefined,
      ).catch((e) => {
        throw new Error(`failed to list containers: ${errorText(e)}`, { cause: e });
      });
      for (const c of containers) {
        // A container that is not running writes nothing more.
        if (c.state !== "CONTAINER_RUNNING") continue;
        this.#add(c.id);
      }
    });
  }

  /** Removes every log of the container, rotated ones included (before it is removed). */
  clean(containerId: string): Promise<void> {
    return this.#withLock(async () => {
      let logPath: string;
      try {
        logPath = (await this.#o.runtime.containerStatus(containerId)).status.logPath;
      } catch (e) {
        throw new Error(`failed to get container status "${containerId}": ${errorText(e)}`, {
          cause: e,
        });
      }
      if (!logPath) return;
      for (const l of await listWithPrefix(logPath, "")) {
        try {
          await Deno.remove(l);
        } catch (e) {
          if (e instanceof Deno.errors.NotFound) continue;
          throw new Error(
            `failed to remove container "${containerId}" log "${l}": ${errorText(e)}`,
          );
        }
      }
    });
  }

  /** Checks one container now: rotates its log when it is too big. */
  async processContainer(id: string, worker = 0): Promise<void> {
    let path: string;
    try {
      path = (await this.#o.runtime.containerStatus(id)).status.logPath;
    } catch (e) {
      log.error(e, "Failed to get container status", { worker, containerID: id });
      return;
    }
    if (!path) return;
    let size: number;
    try {
      size = (await Deno.stat(path)).size;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) {
        log.error(e, "Failed to stat container log", { worker, containerID: id, path });
        return;
      }
      // Renamed away and never reopened (an agent stopped mid-rotation): reopen it now.
      try {
        await this.#o.runtime.reopenContainerLog(id);
        size = (await Deno.stat(path)).size;
      } catch (err) {
        log.error(err, "Container log doesn't exist, reopen container log failed", {
          worker,
          containerID: id,
          path,
        });
        return;
      }
    }
    if (size < this.#o.maxSizeBytes) {
      log.V(7).info("log file doesn't need to be rotated", {
        worker,
        containerID: id,
        path,
        currentSize: size,
        maxSize: this.#o.maxSizeBytes,
      });
      return;
    }
    try {
      await this.#rotateLog(id, path);
    } catch (e) {
      log.error(e, "Failed to rotate log for container", {
        worker,
        containerID: id,
        path,
        currentSize: size,
        maxSize: this.#o.maxSizeBytes,
      });
    }
  }

  async #rotateLog(id: string, logPath: string): Promise<void> {
    let logs = await listWithPrefix(logPath, ".");
    const { inuse, unused } = filterUnusedLogs(logs);
    for (const l of unused) {
      await Deno.remove(l).catch((e) => {
        throw new Error(`failed to cleanup logs: failed to remove unused log "${l}": ${e}`);
      });
    }
    logs = await this.#removeExcessLogs(inuse);
    for (const l of logs) {
      if (l.endsWith(compressSuffix)) continue;
      await compressLog(l).catch((e) => {
        throw new Error(`failed to compress log "${l}": ${errorText(e)}`);
      });
    }
    await this.#rotateLatestLog(id, logPath).catch((e) => {
      throw new Error(`failed to rotate log "${logPath}": ${errorText(e)}`);
    });
  }

  // Besides the live log and the one being rotated, maxFiles-2 rotated files stay; the oldest go.
  async #removeExcessLogs(logs: string[]): Promise<string[]> {
    logs.sort();
    const maxRotatedFiles = Math.max(this.#o.maxFiles - 2, 0);
    const excess = Math.max(logs.length - maxRotatedFiles, 0);
    for (const l of logs.slice(0, excess)) {
      await Deno.remove(l).catch((e) => {
        throw new Error(`failed to remove excess logs: failed to remove old log "${l}": ${e}`);
      });
    }
    return logs.slice(excess);
  }

  // The latest log is renamed, not compressed, so that readers can finish it.
  async #rotateLatestLog(id: string, logPath: string): Promise<void> {
    const rotated = `${logPath}.${timestamp(new Date(this.#o.clock.now()))}`;
    await Deno.rename(logPath, rotated);
    try {
      await this.#o.runtime.reopenContainerLog(id);
    } catch (e) {
      // Put it back so that the next round tries again.
      await Deno.rename(rotated, logPath).catch((renameErr) =>
        log.error(renameErr, "Failed to rename rotated log", {
          rotatedLog: rotated,
          newLog: logPath,
          containerID: id,
        })
      );
      throw new Error(`failed to reopen container log "${id}": ${errorText(e)}`, { cause: e });
    }
  }

  #add(id: string): void {
    if (this.#queued.has(id)) return;
    this.#queued.add(id);
    this.#queue.push(id);
    this.#wake?.();
  }

  async #processQueueItems(worker: number): Promise<void> {
    log.V(4).info("Starting container log rotation worker", { workerID: worker });
    while (!this.#stop.signal.aborted) {
      const id = this.#queue.shift();
      if (id === undefined) {
        await new Promise<void>((resolve) => this.#wake = resolve);
        continue;
      }
      this.#queued.delete(id);
      this.#busy++;
      try {
        await this.processContainer(id, worker);
      } finally {
        this.#busy--;
        if (this.#busy === 0 && this.#queue.length === 0) {
          for (const resolve of this.#idle.splice(0)) resolve();
        }
      }
    }
    log.V(4).info("Terminating container log rotation worker", { workerID: worker });
  }

  #withLock<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(fn);
    this.#lock = run.then(() => {}, () => {});
    return run;
  }
}

/** Builds the log manager; a negative max size disables rotation (kubelet's stub manager). */
export function newContainerLogManager(
  options: ContainerLogManagerOptions,
): ContainerLogManager | undefined {
  if (options.maxSizeBytes < 0) return undefined;
  return new ContainerLogManager(options);
}

/**
 * Every file of a container's log, oldest first, the live log last (kubelet's `GetAllLogs`):
 * what `kubectl logs` would read.
 */
export async function getAllLogs(logPath: string): Promise<string[]> {
  const { inuse } = filterUnusedLogs(await listWithPrefix(logPath, "."));
  return [...inuse.sort(), logPath];
}

/**
 * Splits rotated files into those in use and leftovers of a failed rotation: temporary files,
 * and uncompressed files whose `.gz` already exists.
 */
export function filterUnusedLogs(logs: string[]): { inuse: string[]; unused: string[] } {
  const all = new Set(logs);
  const inuse: string[] = [];
  const unused: string[] = [];
  for (const l of logs) {
    const used = !l.endsWith(tmpSuffix) &&
      (l.endsWith(compressSuffix) || !all.has(l + compressSuffix));
    (used ? inuse : unused).push(l);
  }
  return { inuse, unused };
}

// Files next to `path` named `<basename of path><more>...` (Go's Glob of `<path><more>*`).
async function listWithPrefix(path: string, more: string): Promise<string[]> {
  const prefix = basename(path) + more;
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(dirname(path))) {
      if (e.name.startsWith(prefix)) out.push(join(dirname(path), e.name));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return out;
}

// Gzips `path` to `<path>.gz` through a temporary file, then removes `path`.
async function compressLog(path: string): Promise<void> {
  const { mode } = await Deno.stat(path);
  const tmp = path + tmpSuffix;
  try {
    const src = await Deno.open(path, { read: true });
    const dst = await Deno.open(tmp, {
      write: true,
      create: true,
      truncate: true,
      mode: (mode ?? 0o640) & 0o777,
    }).catch((e) => {
      src.close();
      throw e;
    });
    await src.readable.pipeThrough(new CompressionStream("gzip")).pipeTo(dst.writable);
    await Deno.rename(tmp, path + compressSuffix);
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
  await Deno.remove(path);
}

// Go's "20060102-150405" in local time.
function timestamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-` +
    `${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}
