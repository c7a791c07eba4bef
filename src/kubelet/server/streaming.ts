/**
 * The secure port's streaming routes: `/exec`, `/attach` and `/portForward` ask the runtime for
 * a streaming URL and proxy the client's upgraded connection to it ({@linkcode proxyUpgrade});
 * `/run` runs a command to its end and answers with its output. Paths, query parameters, status
 * codes and texts are kubelet's:
 *
 * | Route                                                        | Methods   |
 * | ------------------------------------------------------------ | --------- |
 * | `/exec/{podNamespace}/{podID}[/{uid}]/{containerName}`       | GET, POST |
 * | `/attach/{podNamespace}/{podID}[/{uid}]/{containerName}`     | GET, POST |
 * | `/portForward/{podNamespace}/{podID}[/{uid}]`                | GET, POST |
 * | `/run/{podNamespace}/{podID}[/{uid}]/{containerName}?cmd=…`  | POST      |
 *
 * Mirrors the routes of `InstallAuthRequiredHandlers` and getExec, getAttach, getPortForward,
 * getRun, getExecRequestParams in kubelet's pkg/kubelet/server/server.go, with cri-streaming's
 * `remotecommand.NewOptions`, `portforward.NewV4Options` and `streaming.WriteError`.
 * @module
 */
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { grpcCode } from "../../cri_client/connection.ts";
import { GrpcStatus } from "../../util/grpc_codes.ts";
import type { Pod } from "../../api/core/v1/mod.ts";
import type { StreamOptions } from "../kuberuntime/kuberuntime_container.ts";
import { getPodFullName } from "../types/pod_update.ts";
import { proxyUpgrade } from "./upgradeaware.ts";

/**
 * The server's streaming host (the part of kubelet's `HostInterface` the `/exec`, `/attach`,
 * `/portForward` and `/run` handlers call), declared here so that the server does not import the
 * kubelet; kubelet_streaming.ts provides it.
 */
export interface StreamingHost {
  /** The API pod by namespace and name (kubelet's `GetPodByName`). */
  getPodByName(namespace: string, name: string): Pod | undefined;
  /** Where the runtime serves `cmd` in the container. */
  getExec(
    podFullName: string,
    podUID: string,
    containerName: string,
    cmd: string[],
    streamOpts: StreamOptions,
  ): Promise<URL>;
  /** Where the runtime serves the container's main process's streams. */
  getAttach(
    podFullName: string,
    podUID: string,
    containerName: string,
    streamOpts: StreamOptions,
  ): Promise<URL>;
  /** Where the runtime forwards the pod's ports. */
  getPortForward(
    podName: string,
    podNamespace: string,
    podUID: string,
    ports: number[],
  ): Promise<URL>;
  /** Runs `cmd` in the container to its end: stdout then stderr (rejects on a non-zero exit). */
  runInContainer(
    podFullName: string,
    podUID: string,
    containerName: string,
    cmd: string[],
  ): Promise<Uint8Array>;
}

/** kubelet's streaming path prefixes. */
export const execPath = "/exec/";
export const attachPath = "/attach/";
export const portForwardPath = "/portForward/";
export const runPath = "/run/";

/** The query parameters of a remote command (`api.ExecStdinParam` …, `api.ExecCommandParam`). */
export const execStdinParam = "input";
export const execStdoutParam = "output";
export const execStderrParam = "error";
export const execTTYParam = "tty";
export const execCommandParam = "command";

/** cri-streaming's token cache TTL: a 429's `Retry-After`. */
const cacheTTLSeconds = 60;

/** Options of {@linkcode streamingRoute}. */
export interface StreamingRouteOptions {
  /** Drives the proxied streams' deadline (default: the wall clock). */
  clock?: Clock;
  /** A proxied stream ends this long after its request (default 4 h, kubelet's). */
  streamTimeoutMs?: number;
}

/**
 * Answers a request for one of the streaming routes; undefined when the path is not one of
 * them. `host` is undefined while the agent is starting (503).
 *
 * @example
 * ```ts
 * declare const host: StreamingHost;
 *
 * const res = streamingRoute(host, new Request("https://n/run/default/web/app?cmd=date", {
 *   method: "POST",
 * }));
 * if (res) console.log((await res).status);
 * ```
 */
export function streamingRoute(
  host: StreamingHost | undefined,
  req: Request,
  options: StreamingRouteOptions = {},
): Promise<Response> | undefined {
  const url = new URL(req.url);
  const route = [execPath, attachPath, portForwardPath, runPath].find((p) =>
    url.pathname.startsWith(p)
  );
  if (!route) return undefined;
  const params = url.pathname.slice(route.length).split("/").map(decodeURIComponent);
  // go-restful's route match: the named segments, or the same with the pod's UID before the
  // container; anything else is not a route.
  const withContainer = route !== portForwardPath;
  const counts = withContainer ? [3, 4] : [2, 3];
  if (!counts.includes(params.length) || params.some((p) => p === "")) {
    return Promise.resolve(errorString(404, "404: Page Not Found"));
  }
  const methods = route === runPath ? ["POST"] : ["GET", "POST"];
  if (!methods.includes(req.method)) {
    return Promise.resolve(
      errorString(405, "405: Method Not Allowed", { allow: methods.join(", ") }),
    );
  }
  if (!host) return Promise.resolve(errorString(503, "starting\n"));
  const [podNamespace, podName] = params;
  const p: ExecRequestParams = {
    podNamespace,
    podName,
    podUID: params.length === counts[1] ? params[2] : "",
    containerName: withContainer ? params[params.length - 1] : "",
    cmd: url.searchParams.getAll(execCommandParam),
  };
  switch (route) {
    case execPath:
      return getExec(host, req, p, options);
    case attachPath:
      return getAttach(host, req, p, options);
    case portForwardPath:
      return getPortForward(host, req, p, options);
    default:
      return getRun(host, url, p);
  }
}

/** kubelet's `execRequestParams`. */
interface ExecRequestParams {
  podNamespace: string;
  podName: string;
  podUID: string;
  containerName: string;
  /** The `command` query parameters (exec); `/run` reads `cmd`. */
  cmd: string[];
}

/**
 * cri-streaming's `remotecommand.NewOptions`: the streams from the query (`input`, `output`,
 * `error`, `tty`, each on when `1`). With a TTY there is no separate stderr (dropped, as kubelet
 * does); at least one stream must be asked for.
 *
 * @example
 * ```ts
 * newOptions(new URLSearchParams("output=1&tty=1&error=1")); // { stdin: false, stdout: true, stderr: false, tty: true }
 * ```
 */
export function newOptions(query: URLSearchParams): StreamOptions | Error {
  const tty = query.get(execTTYParam) === "1";
  const stdin = query.get(execStdinParam) === "1";
  const stdout = query.get(execStdoutParam) === "1";
  let stderr = query.get(execStderrParam) === "1";
  if (tty && stderr) {
    log.V(4).info("Access to exec with tty and stderr is not supported, bypassing stderr");
    stderr = false;
  }
  if (!stdin && !stdout && !stderr) {
    return new Error("you must specify at least 1 of stdin, stdout, stderr");
  }
  return { stdin, stdout, stderr, tty };
}

/**
 * cri-streaming's `portforward.NewV4Options`: a WebSocket request names its ports up front
 * (`port`, repeated or comma-separated, each 1–65535); a SPDY request names none (each stream
 * carries its port).
 *
 * @example
 * ```ts
 * const req = new Request("https://n/portForward/default/web?port=8080,9090", {
 *   headers: { connection: "Upgrade", upgrade: "websocket" },
 * });
 * newV4Options(req); // [8080, 9090]
 * ```
 */
export function newV4Options(req: Request): number[] | Error {
  if (!isWebSocketRequest(req)) return [];
  const portStrings = new URL(req.url).searchParams.getAll("port");
  if (portStrings.length === 0) return new Error(`query parameter "port" is required`);
  const ports: number[] = [];
  for (const portString of portStrings) {
    if (portString === "") return new Error(`query parameter "port" cannot be empty`);
    for (const p of portString.split(",")) {
      // Go's strconv.ParseUint(p, 10, 16).
      if (!/^\d+$/.test(p)) {
        return new Error(
          `unable to parse "${portString}" as a port: strconv.ParseUint: parsing "${p}": invalid syntax`,
        );
      }
      const port = Number(p);
      if (port > 65535) {
        return new Error(
          `unable to parse "${portString}" as a port: strconv.ParseUint: parsing "${p}": value out of range`,
        );
      }
      if (port < 1) return new Error(`port "${portString}" must be > 0`);
      ports.push(port);
    }
  }
  return ports;
}

// wsstream's IsWebSocketRequest: an upgrade to "websocket".
function isWebSocketRequest(req: Request): boolean {
  const connection = (req.headers.get("connection") ?? "").toLowerCase();
  const upgrade = (req.headers.get("upgrade") ?? "").toLowerCase();
  return connection.split(",").some((t) => t.trim() === "upgrade") && upgrade === "websocket";
}

/**
 * cri-streaming's `WriteError`: the runtime's error with the status its gRPC code maps to
 * (NotFound 404, ResourceExhausted 429 with `Retry-After`, anything else 500).
 *
 * @example
 * ```ts
 * writeError(new Error("container not found (\"app\")")).status; // 500
 * ```
 */
export function writeError(err: unknown): Response {
  const text = err instanceof Error ? err.message : String(err);
  switch (grpcCode(err)) {
    case GrpcStatus.NotFound:
      return errorString(404, text);
    case GrpcStatus.ResourceExhausted:
      return errorString(429, text, { "retry-after": String(cacheTTLSeconds) });
    default:
      return errorString(500, text);
  }
}

// kubelet's getExec.
async function getExec(
  host: StreamingHost,
  req: Request,
  params: ExecRequestParams,
  options: StreamingRouteOptions,
): Promise<Response> {
  const streamOpts = newOptions(new URL(req.url).searchParams);
  if (streamOpts instanceof Error) return badRequest(streamOpts);
  const pod = host.getPodByName(params.podNamespace, params.podName);
  if (!pod) return errorString(404, "pod does not exist");
  let url: URL;
  try {
    url = await host.getExec(
      getPodFullName(pod),
      params.podUID,
      params.containerName,
      params.cmd,
      streamOpts,
    );
  } catch (e) {
    return writeError(e);
  }
  return await proxyUpgrade(req, url, options);
}

// kubelet's getAttach.
async function getAttach(
  host: StreamingHost,
  req: Request,
  params: ExecRequestParams,
  options: StreamingRouteOptions,
): Promise<Response> {
  const streamOpts = newOptions(new URL(req.url).searchParams);
  if (streamOpts instanceof Error) return badRequest(streamOpts);
  const pod = host.getPodByName(params.podNamespace, params.podName);
  if (!pod) return errorString(404, "pod does not exist");
  let url: URL;
  try {
    url = await host.getAttach(
      getPodFullName(pod),
      params.podUID,
      params.containerName,
      streamOpts,
    );
  } catch (e) {
    return writeError(e);
  }
  return await proxyUpgrade(req, url, options);
}

// kubelet's getPortForward. (kubelet translates a WebSocket tunnelling request to SPDY itself;
// the API server only sends one to a node that declares ExtendWebSocketsToKubelet, which this
// one does not.)
async function getPortForward(
  host: StreamingHost,
  req: Request,
  params: ExecRequestParams,
  options: StreamingRouteOptions,
): Promise<Response> {
  const ports = newV4Options(req);
  if (ports instanceof Error) return badRequest(ports);
  const pod = host.getPodByName(params.podNamespace, params.podName);
  if (!pod) return errorString(404, "pod does not exist");
  if (params.podUID !== "" && pod.metadata.uid !== params.podUID) {
    return errorString(404, "pod not found");
  }
  let url: URL;
  try {
    url = await host.getPortForward(
      pod.metadata.name ?? "",
      pod.metadata.namespace ?? "",
      pod.metadata.uid ?? "",
      ports,
    );
  } catch (e) {
    return writeError(e);
  }
  return await proxyUpgrade(req, url, options);
}

// kubelet's getRun: the command from `cmd` split on spaces (the legacy parameter), its output
// (stdout then stderr) as a JSON-typed body; a failure, a non-zero exit included, is a 500.
async function getRun(host: StreamingHost, url: URL, params: ExecRequestParams): Promise<Response> {
  const pod = host.getPodByName(params.podNamespace, params.podName);
  if (!pod) return errorString(404, "pod does not exist");
  const cmd = (url.searchParams.get("cmd") ?? "").split(" ");
  let data: Uint8Array;
  try {
    data = await host.runInContainer(getPodFullName(pod), params.podUID, params.containerName, cmd);
  } catch (e) {
    return errorString(500, e instanceof Error ? e.message : String(e));
  }
  // go-restful's writeJSON without a value: the status alone.
  if (data.length === 0) return new Response(null, { status: 200 });
  return new Response(data.slice(), {
    status: 200,
    headers: { "content-type": "application/json" },
  });
}

function badRequest(err: Error): Response {
  log.error(err, "Bad streaming request");
  return errorString(400, err.message);
}

// go-restful's WriteErrorString: the status and the text, as text/plain.
function errorString(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(text, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", ...headers },
  });
}
