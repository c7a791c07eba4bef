/**
 * Lists the requests of node identities (`system:node:*`) that a kube-apiserver refused (403) or
 * failed (5xx), read from its JSON-lines audit log from a byte offset on; exits 1 when there are
 * any. CI runs it after the API-mode e2e against the real server (scripts/kube-apiserver.sh writes
 * the audit log), so "no request of the agent was ever forbidden" is checked there too.
 *
 *   deno run --allow-read scripts/audit_refusals.ts <audit.log> [byte offset]
 * @module
 */

/**
 * One refused request as `"<code> <verb> <requestURI> <user>"`, from an audit log's text.
 *
 * One 403 is not a refusal: the node authorizer cannot relate a node to an object that no longer
 * exists, so a node's GET of a pod deleted a moment before (and not created again since) is
 * answered 403 where others get 404. kubelet's status manager hits that window when a mirror pod
 * is deleted or a pod evicted, as it does.
 */
export function nodeRefusals(text: string): string[] {
  const out: string[] = [];
  const deleted = new Set<string>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const event = JSON.parse(line);
    const code = event.responseStatus?.code ?? 0;
    const user = String(event.user?.username ?? "");
    const ref = event.objectRef ?? {};
    const key = ref.name ? `${ref.resource}/${ref.namespace ?? ""}/${ref.name}` : "";
    if (key && code < 300) {
      // An eviction (`kubectl drain`) is a delete too: the API server removes a pod that is not
      // running at once, and marks a running one for a graceful delete.
      const removes = ref.subresource === "eviction"
        ? event.verb === "create"
        : event.verb === "delete";
      if (removes) deleted.add(key);
      else if (event.verb === "create" && !ref.subresource) deleted.delete(key);
    }
    if (!user.startsWith("system:node:") || !(code === 403 || code >= 500)) continue;
    if (code === 403 && event.verb === "get" && deleted.has(key) && !ref.subresource) continue;
    out.push(`${code} ${event.verb} ${event.requestURI} ${user}`);
  }
  return out;
}

if (import.meta.main) {
  const [path, offset = "0"] = Deno.args;
  if (!path) {
    console.error("usage: audit_refusals.ts <audit.log> [byte offset]");
    Deno.exit(2);
  }
  const bytes = await Deno.readFile(path);
  const refused = nodeRefusals(new TextDecoder().decode(bytes.subarray(Number(offset))));
  for (const r of refused) console.log(`refused: ${r}`);
  console.log(`audit: ${refused.length} refused node request(s) in ${path} from byte ${offset}`);
  Deno.exit(refused.length === 0 ? 0 : 1);
}
