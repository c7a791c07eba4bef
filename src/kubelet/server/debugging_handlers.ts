/**
 * The paths kubelet answers with a refusal, and `/configz`. On the read-only port (kubelet builds
 * it without a configuration, so without debugging handlers) `/run/`, `/exec/`, `/attach/`,
 * `/portForward/`, `/containerLogs/`, `/runningpods/`, `/debug/pprof/` and `/logs/` answer
 * `405 Debug endpoints are disabled.`. On the secure port (debugging handlers on, as kubelet's
 * default) the endpoints probelet does not have answer as kubelet does with their switch off:
 * `/logs/` (`enableSystemLogHandler`), `/debug/pprof/` (`enableProfilingHandler`) and
 * `/debug/flags/v` (`enableDebugFlagsHandler`). `/configz` is the effective configuration as
 * `{"kubeletconfig": {...}}`.
 * Mirrors kubelet's pkg/kubelet/server/server.go (`InstallDebuggingDisabledHandlers`,
 * `InstallSystemLogHandler`, `InstallProfilingHandler`, `InstallDebugFlagsHandler`,
 * `getHandlerForDisabledEndpoint`) and k8s.io/component-base/configz.
 * @module
 */

/** Go's ServeMux patterns: a trailing slash is a subtree, otherwise the exact path. */
type Pattern = string;

/** The read-only port's refused paths (kubelet's `InstallDebuggingDisabledHandlers`). */
export const debuggingDisabledPaths: readonly Pattern[] = [
  "/run/",
  "/exec/",
  "/attach/",
  "/portForward/",
  "/containerLogs/",
  "/runningpods/",
  "/debug/pprof/",
  "/logs/",
];

/** The secure port's endpoints that are switched off here, with kubelet's texts. */
export const disabledEndpoints: ReadonlyMap<Pattern, string> = new Map([
  ["/logs/", "logs endpoint is disabled."],
  ["/debug/pprof/", "profiling endpoint is disabled."],
  ["/debug/flags/v", "flags endpoint is disabled."],
]);

/** kubelet's configz path. */
export const configzPath = "/configz";

// Go's http.Error: the text and a newline, as plain text, not sniffed.
function httpError(text: string, status: number): Response {
  return new Response(text + "\n", {
    status,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "x-content-type-options": "nosniff",
    },
  });
}

// Go's ServeMux: a subtree pattern's path without its slash is redirected to it (301).
function muxRedirect(pathname: string, url: URL): Response {
  const location = pathname + "/" + url.search;
  const body = `<a href="${location}">Moved Permanently</a>.\n\n`;
  return new Response(body, {
    status: 301,
    headers: { location, "content-type": "text/html; charset=utf-8" },
  });
}

function match(patterns: Iterable<Pattern>, url: URL): Pattern | "redirect" | undefined {
  for (const p of patterns) {
    if (p.endsWith("/")) {
      if (url.pathname.startsWith(p)) return p;
      if (url.pathname === p.slice(0, -1)) return "redirect";
    } else if (url.pathname === p) {
      return p;
    }
  }
  return undefined;
}

/**
 * The read-only port's answer for a debugging path, or undefined for any other path.
 *
 * @example
 * ```ts
 * const res = debuggingDisabled(new URL("http://x/exec/default/web/app"));
 * res?.status; // 405
 * ```
 */
export function debuggingDisabled(url: URL): Response | undefined {
  const m = match(debuggingDisabledPaths, url);
  if (m === undefined) return undefined;
  if (m === "redirect") return muxRedirect(url.pathname, url);
  return httpError("Debug endpoints are disabled.", 405);
}

/**
 * The secure port's answer for a switched-off endpoint, or undefined for any other path.
 *
 * @example
 * ```ts
 * (await disabledEndpoint(new URL("https://x/debug/pprof/heap"))?.text()); // "profiling endpoint is disabled.\n"
 * ```
 */
export function disabledEndpoint(url: URL): Response | undefined {
  const m = match(disabledEndpoints.keys(), url);
  if (m === undefined) return undefined;
  if (m === "redirect") return muxRedirect(url.pathname, url);
  return httpError(disabledEndpoints.get(m)!, 405);
}

/**
 * `/configz`: `{"kubeletconfig": config}` as component-base's configz writes it.
 *
 * @example
 * ```ts
 * await configz({ kind: "KubeletConfiguration" }).json(); // { kubeletconfig: { kind: ... } }
 * ```
 */
export function configz(config: Record<string, unknown>): Response {
  return new Response(JSON.stringify({ kubeletconfig: config }), {
    headers: { "content-type": "application/json", "x-content-type-options": "nosniff" },
  });
}
