/**
 * `/stats/summary` (GET or POST; `only_cpu_and_memory=true` for the node's and pods' CPU and memory
 * only): the summary as JSON, or kubelet's `Internal Error: ...` with status 500.
 * Mirrors kubelet's pkg/kubelet/server/stats/handler.go (`CreateHandlers`, `handleSummary`).
 * @module
 */
import * as log from "../../../util/log.ts";
import type { SummaryProvider } from "./summary.ts";
import { summaryJSON } from "./types.ts";
import { errorText } from "../../../util/errors.ts";

/** kubelet's stats path prefix. */
export const statsPath = "/stats/";

/** The summary path. */
export const summaryPath = "/stats/summary";

/**
 * Answers `/stats/summary`; other paths under `/stats/` are not found (404), as go-restful answers
 * a path no route matches.
 *
 * @example
 * ```ts
 * declare const summaryProvider: Parameters<typeof handleSummary>[1];
 * const res = await handleSummary(new Request("http://x/stats/summary"), summaryProvider);
 * ```
 */
export async function handleSummary(
  req: Request,
  summaryProvider: SummaryProvider,
): Promise<Response> {
  const url = new URL(req.url);
  if (url.pathname !== summaryPath) {
    return new Response("404 page not found", {
      status: 404,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  }
  if (req.method !== "GET" && req.method !== "POST") {
    return new Response("405: Method Not Allowed", {
      status: 405,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  }
  // Go's ParseForm: the query, and for a POST a form body too.
  const form = new URLSearchParams(url.search);
  if (req.method === "POST") {
    const type = req.headers.get("content-type") ?? "";
    if (type.startsWith("application/x-www-form-urlencoded")) {
      for (const [k, v] of new URLSearchParams(await req.text())) form.append(k, v);
    }
  }
  const only = form.getAll("only_cpu_and_memory");
  const onlyCPUAndMemory = only.length === 1 && only[0] === "true";
  try {
    const summary = onlyCPUAndMemory
      ? await summaryProvider.getCPUAndMemoryStats()
      : await summaryProvider.get(true);
    return new Response(summaryJSON(summary), {
      headers: { "content-type": "application/json" },
    });
  } catch (e) {
    log.error(e, "HTTP InternalServerError serving", { request: summaryPath });
    const why = errorText(e);
    return new Response(`Internal Error: ${why}`, {
      status: 500,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  }
}
