/**
 * Pod folders left behind: after an agent restart, or a teardown that failed half-way, the folders
 * `<root-dir>/pods/<uid>` of pods this node no longer runs are found, their volumes unmounted and
 * the folders removed. Pod log folders (`<namespace>_<name>_<uid>`) under the same root are not
 * pod folders and are left to the container GC.
 * Mirrors kubelet's pkg/kubelet/kubelet_volumes.go (cleanupOrphanedPodDirs, podVolumesExist).
 * @module
 */
import * as log from "../util/log.ts";
import { removePodDir } from "./volumemanager/volume_manager.ts";

/**
 * Removes the folder of every pod under `podsDir` whose UID is not in `activePods` (kubelet's
 * `cleanupOrphanedPodDirs`); returns the UIDs removed. A folder that cannot be removed is logged
 * and tried again at the next housekeeping.
 *
 * @example
 * ```ts
 * await cleanupOrphanedPodDirs("/var/lib/probelet/pods", new Set(["uid-running"]));
 * ```
 */
export async function cleanupOrphanedPodDirs(
  podsDir: string,
  activePods: ReadonlySet<string>,
): Promise<string[]> {
  const removed: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(podsDir)];
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return removed;
    throw e;
  }
  for (const entry of entries) {
    // Log folders are `<namespace>_<name>_<uid>`; a pod folder is the UID alone.
    if (!entry.isDirectory || entry.name.includes("_") || activePods.has(entry.name)) continue;
    try {
      await Deno.stat(`${podsDir}/${entry.name}/volumes`);
    } catch {
      continue; // Not a pod folder of ours (no volumes folder).
    }
    log.V(3).info("Orphaned pod found, removing", { podUID: entry.name });
    try {
      await removePodDir(podsDir, entry.name);
      removed.push(entry.name);
    } catch (e) {
      log.error(e, "Failed to remove orphaned pod dir", { podUID: entry.name });
    }
  }
  return removed;
}
