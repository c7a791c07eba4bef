/**
 * A strict kube-apiserver double for tests: serves pods (+status), nodes (+status),
 * coordination.k8s.io/v1 leases, core/v1 events and namespaces over HTTP (unit tests) or HTTPS with
 * client-certificate identity (the kubeconfig path), with kube-apiserver's semantics for
 * resourceVersion, watch, conflicts, patches, status subresources, graceful deletion and the node
 * authorizer + NodeRestriction (on by default). Every request is logged with its wire bytes, and
 * tests can compact history, close watches and inject faults.
 *
 * Mirrors the request path of k8s.io/apiserver (filters: authentication, authorization; handlers:
 * get, list/watch, create, update, patch, delete). It deliberately does not import src/client, so
 * it checks the client instead of sharing its assumptions.
 * @module
 */
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import { type Clock, RealClock } from "../../../src/util/clock.ts";
import { type Attributes, authorize, forbiddenByAuthorizer, type UserInfo } from "./authz.ts";
import { type PatchType, patchTypes } from "./patch.ts";
import { asApiError, type DeleteOptions, Registry, withTypeMeta } from "./registry.ts";
import {
  checkFieldLabels,
  matches,
  parseFieldSelector,
  parseLabelSelector,
  type Selector,
} from "./selectors.ts";
import {
  ApiError,
  badRequest,
  expired,
  internalError,
  type JsonObject,
  methodNotSupported,
  pathNotFound,
  tooManyRequests,
  unauthorized,
  unsupportedMediaType,
} from "./status.ts";
import { apiVersionOf, metaOf, type ResourceInfo, resources, Storage } from "./storage.ts";
import { type SentWatchEvent, serveWatch, WatchRegistry } from "./watch.ts";

export type { UserInfo } from "./authz.ts";

/** One request as the double received it, for asserting wire bytes. */
export interface RequestRecord {
  method: string;
  /** URL path, e.g. `/api/v1/nodes/n1/status`. */
  path: string;
  /** The raw query string without `?` (as sent, parameter order kept). */
  query: string;
  /** The Content-Type header ("" when absent). */
  contentType: string;
  /** The request body as text ("" when none). */
  body: string;
  /** The authenticated user name ("" when unauthenticated). */
  user: string;
  /** Request verb as the authorizer sees it (get, list, watch, create, update, patch, delete). */
  verb: string;
  /** The answer's HTTP status (200 for a watch that started). */
  status: number;
  /** All request headers, lower-case names. */
  headers: Record<string, string>;
}

/** A fault to inject into matching requests. */
export interface Fault {
  /** Matches the HTTP method (PATCH, GET, ...). */
  method?: string;
  /** Matches the URL path: exact string or a RegExp. */
  path?: string | RegExp;
  /** Matches the authorizer verb (list, watch, patch, ...). */
  verb?: string;
  /** HTTP status to answer with: 500 (InternalError) or 429 (TooManyRequests); none = only latency. */
  status?: 500 | 429;
  /** Retry-After seconds for 429 (default 1). */
  retryAfterSeconds?: number;
  /** Delay before the answer, on the double's clock. */
  latencyMs?: number;
  /** How many matching requests it applies to (default: all). */
  times?: number;
}

/** Options of {@link ApiServerDouble}. */
export interface ApiServerDoubleOptions {
  /** Time source for timestamps, bookmarks, watch timeouts and latency (default: real clock). */
  clock?: Clock;
  /** Node authorizer + NodeRestriction (default true). */
  authz?: boolean;
  /** Bearer tokens and the users they authenticate as. */
  tokens?: Record<string, UserInfo>;
  /** The user of requests without credentials (default: none, so they get 401). */
  defaultUser?: UserInfo;
  /** BOOKMARK period for watches with allowWatchBookmarks (default 60 s, like the watch cache). */
  bookmarkIntervalMs?: number;
}

/** The admin identity (`system:masters`). */
export const adminUser: UserInfo = { name: "probelet-admin", groups: ["system:masters"] };

/** The identity a kubelet's client certificate carries for `nodeName`. */
export function nodeUser(nodeName: string): UserInfo {
  return { name: `system:node:${nodeName}`, groups: ["system:nodes", "system:authenticated"] };
}

interface ResourceTarget {
  info: ResourceInfo;
  namespace?: string;
  name?: string;
  subresource: string;
}

/**
 * The double itself: `handle(request)` answers like kube-apiserver. Use {@link startApiServer} to
 * serve it on 127.0.0.1.
 *
 * @example
 * ```ts
 * const api = new ApiServerDouble({ defaultUser: nodeUser("n1") });
 * api.create("pods", { metadata: { name: "web", namespace: "default" }, spec: { nodeName: "n1", containers: [] } });
 * const res = await api.handle(new Request("http://x/api/v1/namespaces/default/pods/web"));
 * ```
 */
export class ApiServerDouble {
  /** The objects and history (read freely in tests). */
  readonly storage: Storage;
  /** REST operations without HTTP, as the admin (seeding and assertions). */
  readonly registry: Registry;
  /** Every request received, in order. */
  readonly requests: RequestRecord[] = [];
  /** Every watch event sent, in order, with the request that opened the watch. */
  readonly watchEvents: { request: RequestRecord; event: SentWatchEvent }[] = [];
  readonly clock: Clock;
  authz: boolean;
  readonly #tokens: Record<string, UserInfo>;
  readonly #defaultUser?: UserInfo;
  readonly #bookmarkIntervalMs: number;
  readonly #watches = new WatchRegistry();
  #faults: Fault[] = [];

  /** A double with empty storage (plus the default namespaces). */
  constructor(options: ApiServerDoubleOptions = {}) {
    this.clock = options.clock ?? new RealClock();
    this.storage = new Storage();
    this.registry = new Registry(this.storage, this.clock);
    this.authz = options.authz ?? true;
    this.#tokens = options.tokens ?? {};
    this.#defaultUser = options.defaultUser;
    this.#bookmarkIntervalMs = options.bookmarkIntervalMs ?? 60_000;
  }

  // -- Test hooks -----------------------------------------------------------------------------

  /** Creates an object as the admin, without HTTP (namespace from its metadata). */
  create(resource: string, obj: JsonObject): JsonObject {
    const info = resourceInfo(resource);
    const ns = info.namespaced ? (metaOf(obj).namespace ?? "default") : undefined;
    return this.registry.create(info, obj, { namespace: ns });
  }

  /** Reads an object as stored (undefined when absent). */
  get(resource: string, namespace: string | undefined, name: string): JsonObject | undefined {
    const info = resourceInfo(resource);
    const obj = this.storage.get(info.resource, info.namespaced ? namespace : undefined, name);
    return obj ? withTypeMeta(info, obj) : undefined;
  }

  /** Lists stored objects (one namespace or all). */
  list(resource: string, namespace?: string): JsonObject[] {
    return this.storage.list(resourceInfo(resource).resource, namespace);
  }

  /** Replaces an object as the admin (PUT semantics; `status` true for the status subresource). */
  update(resource: string, obj: JsonObject, options: { status?: boolean } = {}): JsonObject {
    const info = resourceInfo(resource);
    const meta = metaOf(obj);
    return this.registry.update(info, obj, {
      namespace: info.namespaced ? meta.namespace ?? "default" : undefined,
      name: meta.name ?? "",
      subresource: options.status ? "status" : "",
    });
  }

  /** Deletes as the admin (DELETE semantics, graceful for bound pods unless grace is 0). */
  delete(
    resource: string,
    target: { namespace?: string; name: string },
    options: DeleteOptions = {},
  ): JsonObject {
    const info = resourceInfo(resource);
    return this.registry.delete(info, {
      namespace: info.namespaced ? target.namespace ?? "default" : undefined,
      name: target.name,
      options,
    }).body;
  }

  /** Forgets watch history at or below `rv` (default: all); older watches get 410 Expired. */
  compact(rv?: number): void {
    this.storage.compact(rv);
  }

  /** Ends every open watch stream. */
  closeWatches(): void {
    this.#watches.closeAll();
  }

  /** Number of watch streams open now. */
  get openWatches(): number {
    return this.#watches.size;
  }

  /** Adds a fault; returns a function that removes it. */
  injectFault(fault: Fault): () => void {
    const entry = { ...fault };
    this.#faults.push(entry);
    return () => {
      this.#faults = this.#faults.filter((f) => f !== entry);
    };
  }

  /** Removes every fault. */
  clearFaults(): void {
    this.#faults = [];
  }

  /** Requests matching a method and path (string or RegExp), for assertions. */
  requestsTo(method: string, path: string | RegExp): RequestRecord[] {
    return this.requests.filter((r) =>
      r.method === method && (typeof path === "string" ? r.path === path : path.test(r.path))
    );
  }

  // -- HTTP -----------------------------------------------------------------------------------

  /**
   * Answers one request. `peer` is the identity from a verified client certificate (HTTPS);
   * otherwise a bearer token or the default user authenticates.
   */
  async handle(request: Request, peer?: UserInfo): Promise<Response> {
    const url = new URL(request.url);
    const body = ["POST", "PUT", "PATCH", "DELETE"].includes(request.method)
      ? await request.text()
      : "";
    const headers: Record<string, string> = {};
    request.headers.forEach((v, k) => headers[k] = v);
    const record: RequestRecord = {
      method: request.method,
      path: url.pathname,
      query: url.search.replace(/^\?/, ""),
      contentType: request.headers.get("content-type") ?? "",
      body,
      user: "",
      verb: "",
      status: 0,
      headers,
    };
    this.requests.push(record);
    let response: Response;
    try {
      response = await this.#serve(request, url, { body, record, peer });
    } catch (err) {
      response = errorResponse(asApiError(err));
    }
    record.status = response.status;
    return response;
  }

  async #serve(
    request: Request,
    url: URL,
    ctx: { body: string; record: RequestRecord; peer?: UserInfo },
  ): Promise<Response> {
    const { record } = ctx;
    const nonResource = serveNonResource(url.pathname);
    const target = parsePath(url.pathname);
    const params = url.searchParams;
    const watch = params.get("watch") === "true" || params.get("watch") === "1";
    const verb = target ? verbOf(request.method, target, watch) : request.method.toLowerCase();
    record.verb = verb;
    await this.#applyFaults(record);
    if (nonResource) return nonResource;
    if (!target) throw pathNotFound();
    const user = this.#authenticate(request, ctx.peer);
    record.user = user.name;
    const selector: Selector = {
      fields: parseFieldSelector(params.get("fieldSelector") ?? ""),
      labels: parseLabelSelector(params.get("labelSelector") ?? ""),
    };
    const { info } = target;
    const nameFromSelector =
      selector.fields.find((r) => r.field === "metadata.name" && r.operator === "=")?.value ?? "";
    const attrs: Attributes = {
      user,
      verb,
      apiGroup: info.group,
      resource: info.resource,
      subresource: target.subresource,
      namespace: target.namespace ?? "",
      name: verb === "list" || verb === "watch" ? nameFromSelector : target.name ?? "",
      fieldSelector: selector.fields,
    };
    if (this.authz) {
      const decision = authorize(attrs, this.storage);
      if (!decision.allowed) throw forbiddenByAuthorizer(attrs, decision.reason);
    }
    const op = { attrs, admission: this.authz };
    const named = {
      namespace: target.namespace,
      name: target.name ?? "",
      subresource: target.subresource,
    };
    switch (verb) {
      case "get":
        return json(200, this.registry.get(info, target.namespace, target.name!));
      case "list":
        checkFieldLabels(info, selector.fields);
        return json(200, this.#list(target, selector, params));
      case "watch":
        checkFieldLabels(info, selector.fields);
        return this.#watch(request, target, { selector, params, record });
      case "create":
        return json(
          201,
          this.registry.create(info, parseBody(ctx.body), { namespace: target.namespace, ctx: op }),
        );
      case "update":
        return json(
          200,
          this.registry.update(info, parseBody(ctx.body), { ...named, ctx: op }),
        );
      case "patch": {
        const type = (record.contentType.split(";")[0] ?? "").trim();
        if (!(patchTypes as readonly string[]).includes(type)) throw unsupportedMediaType();
        const patch = { type: type as PatchType, body: ctx.body };
        return json(200, this.registry.patch(info, patch, { ...named, ctx: op }));
      }
      case "delete": {
        const options = deleteOptions(ctx.body, params);
        return json(200, this.registry.delete(info, { ...named, options, ctx: op }).body);
      }
      default:
        throw methodNotSupported(info, verb);
    }
  }

  #authenticate(request: Request, peer?: UserInfo): UserInfo {
    if (peer) return peer;
    const auth = request.headers.get("authorization") ?? "";
    if (auth.toLowerCase().startsWith("bearer ")) {
      const user = this.#tokens[auth.slice(7).trim()];
      if (!user) throw unauthorized();
      return user;
    }
    if (this.#defaultUser) return this.#defaultUser;
    throw unauthorized();
  }

  async #applyFaults(record: RequestRecord): Promise<void> {
    const fault = this.#faults.find((f) =>
      (f.method === undefined || f.method === record.method) &&
      (f.verb === undefined || f.verb === record.verb) &&
      (f.path === undefined ||
        (typeof f.path === "string" ? f.path === record.path : f.path.test(record.path))) &&
      (f.times === undefined || f.times > 0)
    );
    if (!fault) return;
    if (fault.times !== undefined) fault.times--;
    if (fault.latencyMs) await this.clock.sleep(fault.latencyMs);
    if (fault.status === 500) throw internalError("injected fault");
    if (fault.status === 429) throw tooManyRequests(fault.retryAfterSeconds ?? 1);
  }

  #list(target: ResourceTarget, selector: Selector, params: URLSearchParams): JsonObject {
    const { info } = target;
    let items = this.storage.list(info.resource, target.namespace)
      .filter((o) => matches(info, o, selector));
    const rv = this.storage.resourceVersion;
    const metadata: JsonObject = { resourceVersion: String(rv) };
    const token = params.get("continue");
    if (token) {
      const start = decodeContinue(token, this.storage.compactedRevision);
      items = items.filter((o) => keyOf(o) > start);
    }
    const limit = Number(params.get("limit") ?? "0");
    if (Number.isInteger(limit) && limit > 0 && items.length > limit) {
      const remaining = items.length - limit;
      items = items.slice(0, limit);
      metadata.continue = encodeContinue(rv, keyOf(items[items.length - 1]));
      metadata.remainingItemCount = remaining;
    }
    return {
      kind: info.listKind,
      apiVersion: apiVersionOf(info),
      metadata,
      items: items.map(({ kind: _k, apiVersion: _a, ...rest }) => rest),
    };
  }

  #watch(
    request: Request,
    target: ResourceTarget,
    opts: { selector: Selector; params: URLSearchParams; record: RequestRecord },
  ): Response {
    const { params } = opts;
    const rv = params.get("resourceVersion") ?? "";
    if (rv !== "" && !/^\d+$/.test(rv)) {
      throw badRequest(`resourceVersion: Invalid value: "${rv}": must be a non-negative integer`);
    }
    const timeout = params.get("timeoutSeconds");
    const flag = (name: string) => params.get(name) === "true" || params.get(name) === "1";
    return serveWatch({
      info: target.info,
      namespace: target.namespace,
      selector: opts.selector,
      resourceVersion: rv,
      allowWatchBookmarks: flag("allowWatchBookmarks"),
      sendInitialEvents: flag("sendInitialEvents"),
      timeoutSeconds: timeout === null ? undefined : Number(timeout),
    }, {
      storage: this.storage,
      clock: this.clock,
      registry: this.#watches,
      bookmarkIntervalMs: this.#bookmarkIntervalMs,
      signal: request.signal,
      sent: (event) => this.watchEvents.push({ request: opts.record, event }),
    });
  }
}

function resourceInfo(resource: string): ResourceInfo {
  const info = resources[resource];
  if (!info) throw new Error(`the double does not serve ${resource}`);
  return info;
}

function keyOf(obj: JsonObject): string {
  const meta = metaOf(obj);
  return meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name ?? "";
}

function encodeContinue(rv: number, start: string): string {
  return btoa(JSON.stringify({ v: "meta.k8s.io/v1", rv, start: start + "\u0000" }));
}

function decodeContinue(token: string, compacted: number): string {
  let parsed: { rv?: number; start?: string };
  try {
    parsed = JSON.parse(atob(token));
  } catch {
    throw badRequest(`continue key is not valid: ${token}`);
  }
  if ((parsed.rv ?? 0) < compacted) {
    throw expired(
      "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
    );
  }
  const start = parsed.start ?? "";
  return start.endsWith("\u0000") ? start.slice(0, -1) : start;
}

/** Splits an API path into resource, namespace, name and subresource; undefined if not served. */
function parsePath(pathname: string): ResourceTarget | undefined {
  const parts = pathname.split("/").filter((p) => p !== "").map(decodeURIComponent);
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === "api" && parts.length >= 2) {
    [group, version, rest] = ["", parts[1], parts.slice(2)];
  } else if (parts[0] === "apis" && parts.length >= 3) {
    [group, version, rest] = [parts[1], parts[2], parts.slice(3)];
  } else return undefined;
  const find = (resource: string) => {
    const info = resources[resource];
    return info && info.group === group && info.version === version ? info : undefined;
  };
  if (rest[0] === "namespaces" && rest.length >= 3) {
    const info = find(rest[2]);
    if (info?.namespaced && rest.length <= 5) {
      const subresource = rest[4] ?? "";
      if (subresource !== "" && !(subresource === "status" && info.hasStatus)) return undefined;
      return { info, namespace: rest[1], name: rest[3], subresource };
    }
  }
  const info = find(rest[0] ?? "");
  if (!info || rest.length > 3) return undefined;
  const subresource = rest[2] ?? "";
  if (subresource !== "" && !(subresource === "status" && info.hasStatus)) return undefined;
  // A namespaced resource at the cluster scope is only a list/watch across namespaces.
  if (info.namespaced && rest.length > 1) return undefined;
  return { info, name: rest[1], subresource };
}

function verbOf(method: string, target: ResourceTarget, watch: boolean): string {
  const named = target.name !== undefined;
  switch (method) {
    case "GET":
      return named ? "get" : watch ? "watch" : "list";
    case "POST":
      return named ? "create-named" : "create";
    case "PUT":
      return named ? "update" : "update-collection";
    case "PATCH":
      return named ? "patch" : "patch-collection";
    case "DELETE":
      return named ? "delete" : "deletecollection";
    default:
      return method.toLowerCase();
  }
}

function serveNonResource(pathname: string): Response | undefined {
  switch (pathname) {
    case "/healthz":
    case "/readyz":
    case "/livez":
      return new Response("ok", { status: 200, headers: { "Content-Type": "text/plain" } });
    case "/version":
      return json(200, {
        major: "1",
        minor: "36",
        gitVersion: "v1.36.3-probelet-double",
        platform: `${Deno.build.os}/${Deno.build.arch === "x86_64" ? "amd64" : Deno.build.arch}`,
      });
    case "/api":
      return json(200, { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [] });
    default:
      return undefined;
  }
}

function parseBody(body: string): JsonObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (e) {
    throw badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw badRequest("the request body must be a JSON object");
  }
  return parsed as JsonObject;
}

function deleteOptions(body: string, params: URLSearchParams): DeleteOptions {
  const options: DeleteOptions = {};
  if (body.trim() !== "") {
    const parsed = parseBody(body);
    if (typeof parsed.gracePeriodSeconds === "number") {
      options.gracePeriodSeconds = parsed.gracePeriodSeconds;
    }
    const pre = parsed.preconditions;
    if (typeof pre === "object" && pre !== null && !Array.isArray(pre)) {
      options.preconditions = {
        ...(typeof pre.uid === "string" ? { uid: pre.uid } : {}),
        ...(typeof pre.resourceVersion === "string"
          ? { resourceVersion: pre.resourceVersion }
          : {}),
      };
    }
  }
  const grace = params.get("gracePeriodSeconds");
  if (grace !== null && options.gracePeriodSeconds === undefined) {
    options.gracePeriodSeconds = Number(grace);
  }
  return options;
}

/** A JSON answer, newline-terminated like the API server's encoder. */
function json(status: number, body: JsonObject): Response {
  return new Response(JSON.stringify(body) + "\n", {
    status,
    headers: { "Content-Type": "application/json" },
  });
}

function errorResponse(err: ApiError): Response {
  return new Response(JSON.stringify(err.status) + "\n", {
    status: err.code,
    headers: { "Content-Type": "application/json", ...err.headers },
  });
}

// ---------------------------------------------------------------------------------------------
// Serving

/** A served double; always `close()` it. */
export interface RunningApiServer {
  /** `http://127.0.0.1:<port>` or `https://127.0.0.1:<port>`. */
  url: string;
  port: number;
  double: ApiServerDouble;
  /** Ends open watches and stops listening. */
  close(): Promise<void>;
}

/** TLS material for HTTPS (PEM text). */
export interface ServingTls {
  cert: string;
  key: string;
  /** CA that signs accepted client certificates. */
  clientCa: string;
}

/**
 * Serves a double on 127.0.0.1: plain HTTP (Deno.serve), or HTTPS where the client certificate
 * (verified against `tls.clientCa`) names the user: CN is the user name, O the groups, as
 * kube-apiserver's x509 authenticator reads them. Deno's node:https honours `requestCert` and
 * `getPeerCertificate()` (checked on Deno 2.9.3), so no token mapping is needed for the
 * kubeconfig path.
 */
export async function startApiServer(
  options: ApiServerDoubleOptions & { double?: ApiServerDouble; tls?: ServingTls; port?: number } =
    {},
): Promise<RunningApiServer> {
  const double = options.double ?? new ApiServerDouble(options);
  if (!options.tls) {
    const server = Deno.serve({
      hostname: "127.0.0.1",
      port: options.port ?? 0,
      onListen: () => {},
    }, (request) => double.handle(request));
    const port = server.addr.port;
    return {
      url: `http://127.0.0.1:${port}`,
      port,
      double,
      close: async () => {
        double.closeWatches();
        await server.shutdown();
      },
    };
  }
  const server = https.createServer({
    cert: options.tls.cert,
    key: options.tls.key,
    ca: options.tls.clientCa,
    requestCert: true,
    rejectUnauthorized: false,
  }, (req, res) => {
    serveNode(double, req, res).catch(() => res.destroy());
  });
  const sockets = new Set<{ destroy(): void }>();
  server.on("secureConnection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    double,
    close: async () => {
      double.closeWatches();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

function peerUser(socket: TLSSocket): UserInfo | undefined {
  if (!socket.authorized) return undefined;
  const subject = socket.getPeerCertificate()?.subject as
    | { CN?: string; O?: string | string[] }
    | undefined;
  if (!subject?.CN) return undefined;
  const groups = subject.O === undefined ? [] : Array.isArray(subject.O) ? subject.O : [subject.O];
  return { name: subject.CN, groups: [...groups, "system:authenticated"] };
}

// node:https request -> fetch Request -> double -> streamed back, headers flushed before the body
// so a watch client sees its 200 at once.
async function serveNode(
  double: ApiServerDouble,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of req) chunks.push(chunk as Uint8Array);
  const abort = new AbortController();
  res.on("close", () => abort.abort());
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
  }
  const hasBody = chunks.length > 0 && !["GET", "HEAD"].includes(req.method ?? "GET");
  const request = new Request(`https://127.0.0.1${req.url ?? "/"}`, {
    method: req.method,
    headers,
    body: hasBody ? new Blob(chunks as BlobPart[]) : undefined,
    signal: abort.signal,
  });
  const response = await double.handle(request, peerUser(req.socket as TLSSocket));
  const outHeaders: Record<string, string> = {};
  response.headers.forEach((v, k) => outHeaders[k] = v);
  res.writeHead(response.status, outHeaders);
  res.flushHeaders();
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  abort.signal.addEventListener("abort", () => reader.cancel().catch(() => {}));
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } finally {
    res.end();
  }
}
