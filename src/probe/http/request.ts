/**
 * Building the request an HTTP probe sends: URL from the pod spec, header conversion, kubelet's
 * default `User-Agent` and `Accept` rules, and the `Host` override.
 * Mirrors kubelet's pkg/probe/http/request.go.
 * @module
 */
import type { Container, HTTPGetAction, HTTPHeader } from "../../api/core/v1/mod.ts";
import { goQuote } from "../../util/go_format.ts";
import { kubeUserAgent } from "../../version.ts";
import { resolveContainerPort } from "../util.ts";
import { type HeaderInit, HeaderMap } from "./header.ts";
import { joinHostPort, ProbeURL } from "./url.ts";

/**
 * One probe request, Go's `*http.Request` reduced to what a GET probe uses.
 *
 * @example
 * ```ts
 * const { request } = newProbeRequest("http://10.0.0.1:8080/healthz");
 * request!.url.toString(); // "http://10.0.0.1:8080/healthz"
 * request!.headers.get("User-Agent"); // "kube-probe/1.36"
 * ```
 */
export interface ProbeRequest {
  /** Where the request goes; `toString()` is what Go prints (`http://10.0.0.1:80/`, port kept). */
  url: ProbeURL;
  /** Headers to send, including kubelet's defaults. A `Host` entry here is never sent as such. */
  headers: HeaderMap;
  /** Value for the `Host` header (Go's `Request.Host`); `""` means the URL's host. */
  host: string;
}

/** A request, or the error that prevented building it (Go's `(*http.Request, error)`). */
export interface ProbeRequestResult {
  /** The request, when it could be built. */
  request?: ProbeRequest;
  /** Why it could not: an unresolvable port or an unparsable URL. */
  error?: Error;
}

/**
 * Builds the request for a container's `httpGet` probe: scheme lower-cased (default `http`), host
 * defaulting to the pod IP, port resolved by number or name (a failure is returned as `error`).
 *
 * @example
 * ```ts
 * const { request, error } = newRequestForHTTPGetAction(
 *   { path: "/healthz", port: "http", scheme: "HTTP" },
 *   { container: { name: "app", ports: [{ name: "http", containerPort: 8080 }] }, podIP: "10.0.0.7" },
 * );
 * request?.url.toString(); // "http://10.0.0.7:8080/healthz"
 * ```
 */
export function newRequestForHTTPGetAction(
  httpGet: HTTPGetAction,
  options: { container: Container; podIP: string; userAgentFragment?: string },
): ProbeRequestResult {
  const scheme = (httpGet.scheme ?? "").toLowerCase() || "http";
  const host = httpGet.host || options.podIP;
  const { port, error } = resolveContainerPort(httpGet.port, options.container);
  if (error) return { error };
  const url = formatURL(scheme, host, { port, path: httpGet.path ?? "" });
  const headers = v1HeaderToHTTPHeader(httpGet.httpHeaders ?? []);
  return newProbeRequest(url, headers, { userAgentFragment: options.userAgentFragment });
}

/**
 * Builds a probe request with kubelet's header defaults: `User-Agent: kube-<fragment>/<version>`
 * when absent (present but empty means none is sent), `Accept: *\/*` when absent (empty removes it),
 * and a `Host` entry becoming the request's host. Headers are copied, never modified.
 *
 * @example
 * ```ts
 * const { request } = newProbeRequest("http://127.0.0.1:8080/", { Host: ["example.com"] });
 * request!.host; // "example.com"
 * ```
 */
export function newProbeRequest(
  url: URL | ProbeURL | string,
  headers?: HeaderInit | null,
  options: { userAgentFragment?: string } = {},
): ProbeRequestResult {
  const raw = typeof url === "string" ? url : url.toString();
  let parsed: ProbeURL;
  try {
    parsed = ProbeURL.parse(raw);
  } catch (e) {
    return { error: new Error(`parse ${goQuote(raw)}: ${(e as Error).message}`) };
  }
  parsed.host = removeEmptyPort(parsed.host);

  const h = headers ? new HeaderMap(headers) : new HeaderMap();
  if (!h.has("User-Agent")) {
    h.set("User-Agent", kubeUserAgent(options.userAgentFragment ?? "probe"));
  }
  if (!h.has("Accept")) h.set("Accept", "*/*");
  else if (h.get("Accept") === "") h.del("Accept");
  return { request: { url: parsed, headers: h, host: h.get("Host") } };
}

/**
 * Assembles the probe URL as kubelet's `formatURL`: the path may carry a query (`?foo`), an
 * unparsable path is kept as a plain path, and an IPv6 host is bracketed.
 *
 * @example
 * ```ts
 * formatURL("http", "localhost", { port: 93, path: "?foo" }).toString(); // "http://localhost:93?foo"
 * formatURL("http", "fd00::1", { port: 8080, path: "/" }).toString(); // "http://[fd00::1]:8080/"
 * ```
 */
export function formatURL(
  scheme: string,
  host: string,
  { port, path }: { port: number; path: string },
): ProbeURL {
  let u: ProbeURL;
  try {
    u = ProbeURL.parse(path);
  } catch {
    // Kubelet keeps an unparsable path verbatim rather than failing the probe.
    u = new ProbeURL();
    u.path = path;
  }
  u.scheme = scheme;
  u.host = joinHostPort(host, String(port));
  return u;
}

/**
 * Converts the pod spec's header list to a header map, canonicalising names (`HOST` → `Host`) and
 * keeping repeated names' values in order.
 *
 * @example
 * ```ts
 * v1HeaderToHTTPHeader([{ name: "accept", value: "application/json" }, { name: "Accept", value: "*\/*" }])
 *   .values("Accept"); // ["application/json", "*\/*"]
 * ```
 */
export function v1HeaderToHTTPHeader(headerList: readonly HTTPHeader[]): HeaderMap {
  const headers = new HeaderMap();
  for (const header of headerList) headers.add(header.name, header.value);
  return headers;
}

// Go's NewRequest drops a trailing ":" that has no port after it.
function removeEmptyPort(host: string): string {
  const hasPort = host.lastIndexOf(":") > host.lastIndexOf("]");
  return hasPort && host.endsWith(":") ? host.slice(0, -1) : host;
}
