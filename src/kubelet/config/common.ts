/**
 * Decoding manifest text into pods and giving static pods their identity: the UID derived from
 * the node, the source and the pod's content, the node-suffixed name, the default namespace.
 * Mirrors kubelet's pkg/kubelet/config/common.go (`applyDefaults`, `generatePodName`,
 * `tryDecodeSinglePod`).
 * @module
 */
import { createHash } from "node:crypto";
import type { Pod } from "../../api/core/v1/mod.ts";
import { setDefaultsPod } from "./defaults.ts";
import {
  dropNullFields,
  type FieldError,
  validatePod,
  validateStaticPodIdentity,
} from "./validation.ts";
import { canonicalJSON } from "../../util/hash.ts";

/** The annotation holding a static pod's content hash (kubelet's `ConfigHashAnnotationKey`). */
export const configHashAnnotationKey = "kubernetes.io/config.hash";
/** The annotation naming where a pod came from (kubelet's `ConfigSourceAnnotationKey`). */
export const configSourceAnnotationKey = "kubernetes.io/config.source";
/** The source name of pods read from manifest files (kubelet's `FileSource`). */
export const fileSource = "file";

/**
 * Most documents one manifest file may hold. kubelet runs at most 110 pods on a node (its default
 * `--max-pods`), so a file with more cannot be run anyway; the limit stops a file of countless
 * tiny documents from being parsed at all past that point.
 */
export const maxDocumentsPerFile = 110;

/** The outcome of one YAML/JSON document: a valid, defaulted pod, or the reasons it is not one. */
export interface DecodedDocument {
  /** 1-based position of the document in its file, counting empty documents too. */
  document: number;
  /** The pod, when the document is valid. */
  pod?: Pod;
  /** Everything wrong with the document (empty when `pod` is set). */
  errors: FieldError[];
}

/**
 * Parses every document of a manifest (YAML 1.1, so JSON too and `on` means true), validates each
 * as a Pod and applies the API defaults and the static-pod identity. Empty documents (such as the
 * one after a trailing `---`) are skipped; one bad document never hides the others. The `yaml`
 * package is loaded by the first call: an agent with no manifest to read never pays for it.
 *
 * @example
 * ```ts
 * const [doc] = await decodePodDocuments(
 *   "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: busybox}]}\n",
 *   { source: "web.yaml", nodeName: "node-a" },
 * );
 * doc.pod?.metadata.name; // "web-node-a"
 * ```
 */
export async function decodePodDocuments(
  text: string,
  options: { source: string; nodeName: string; maxDocuments?: number },
): Promise<DecodedDocument[]> {
  const { Composer, LineCounter, Parser } = await import("yaml");
  const maxDocuments = options.maxDocuments ?? maxDocumentsPerFile;
  const decoded: DecodedDocument[] = [];
  const lineCounter = new LineCounter();
  const parser = new Parser(lineCounter.addNewLine);
  const composer = new Composer({
    version: "1.1",
    // YAML 1.1 turns unquoted dates into timestamps; the API only has strings there (Go's YAML
    // decoder keeps them as text when the target is a string), so keep the text.
    customTags: (tags) =>
      tags.filter((t) => typeof t === "string" || t.tag !== "tag:yaml.org,2002:timestamp"),
  });
  // Documents are composed one at a time, so a file past the limit is not parsed any further.
  let document = 0;
  for (const doc of composer.compose(parser.parse(text))) {
    document++;
    if (document > maxDocuments) {
      const detail = `more than ${maxDocuments} documents in one file; the file is ignored`;
      return [{ document, errors: [{ field: "", detail }] }];
    }
    if (doc.errors.length > 0) {
      // Later syntax errors are mostly echoes of the first one: report that one only.
      const error = doc.errors[0];
      let detail = firstLine(error.message);
      if (error.pos[0] >= 0) {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        detail += ` at line ${line}, column ${col}`;
      }
      decoded.push({ document, errors: [{ field: "", detail: clip(detail) }] });
      continue;
    }
    let raw: unknown;
    try {
      raw = doc.toJS();
    } catch (e) {
      decoded.push({ document, errors: [{ field: "", detail: clip(firstLine(String(e))) }] });
      continue;
    }
    if (raw === null || raw === undefined) continue; // empty document, e.g. after a trailing `---`
    const value = dropNullFields(raw);
    const errors = validatePod(value);
    if (errors.length > 0) {
      decoded.push({ document, errors });
      continue;
    }
    const pod = structuredClone(value) as Pod;
    setDefaultsPod(pod);
    applyStaticPodDefaults(pod, { source: options.source, nodeName: options.nodeName, raw: value });
    // The node suffix and the generated uid are only known now; they end up in file names.
    const identityErrors = validateStaticPodIdentity(pod);
    if (identityErrors.length > 0) {
      decoded.push({ document, errors: identityErrors });
      continue;
    }
    decoded.push({ document, pod, errors: [] });
  }
  return decoded;
}

/**
 * Gives a pod read from a file its static-pod identity, in place, as kubelet's `applyDefaults`:
 * a UID derived from the node, the source and the content (unless the manifest sets one), the
 * name suffixed with `-<nodeName>`, namespace `default` when missing, `spec.nodeName`, the
 * config hash and source annotations, and phase Pending.
 *
 * @example
 * ```ts
 * import { Pod } from "../../api/core/v1/types.ts";
 *
 * const pod: Pod = { metadata: { name: "web" }, spec: { containers: [] } };
 * applyStaticPodDefaults(pod, { source: "/etc/pods/web.yaml", nodeName: "Node-A", raw: {} });
 * pod.metadata.name; // "web-node-a"
 * pod.metadata.namespace; // "default"
 * ```
 */
export function applyStaticPodDefaults(
  pod: Pod,
  options: { source: string; nodeName: string; raw: unknown },
): void {
  const meta = pod.metadata;
  if (!meta.uid) meta.uid = staticPodUID(options.nodeName, options.source, options.raw);
  meta.name = generatePodName(meta.name ?? "", options.nodeName);
  if (!meta.namespace) meta.namespace = "default";
  pod.spec.nodeName = options.nodeName;
  meta.annotations = {
    ...meta.annotations,
    [configHashAnnotationKey]: meta.uid,
    [configSourceAnnotationKey]: fileSource,
  };
  pod.status = { phase: "Pending" };
}

/**
 * A static pod's name: the manifest's name and the node name (lowercased), so that the same
 * manifest on two nodes yields two pods.
 *
 * @example
 * ```ts
 * generatePodName("web", "Node-A"); // "web-node-a"
 * ```
 */
export function generatePodName(name: string, nodeName: string): string {
  return `${name}-${nodeName.toLowerCase()}`;
}

/**
 * A stable UID for a static pod: the SHA-256 of the node name, the source file and the document's
 * canonical JSON, shaped like a UUID. The same content in the same file on the same node always
 * gets the same UID; any change to the content gives a new one (kubelet hashes the pod object the
 * same way, so an edited manifest is a new pod).
 *
 * @example
 * ```ts
 * staticPodUID("node-a", "/etc/pods/web.yaml", { kind: "Pod" }).length; // 36
 * ```
 */
export function staticPodUID(nodeName: string, source: string, raw: unknown): string {
  const hex = createHash("sha256")
    .update(`host:${nodeName}\nfile:${source}\n${canonicalJSON(raw)}`)
    .digest("hex");
  return [
    hex.slice(0, 8),
    hex.slice(8, 12),
    hex.slice(12, 16),
    hex.slice(16, 20),
    hex.slice(20, 32),
  ].join("-");
}

function firstLine(message: string): string {
  return message.split("\n", 1)[0].replace(/:$/, "");
}

// A parser message may quote the document (an alias name, a tag): never more than a short line.
function clip(detail: string): string {
  return detail.length <= 160 ? detail : `${detail.slice(0, 157)}...`;
}
