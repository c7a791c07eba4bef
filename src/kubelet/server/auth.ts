/**
 * The secure port's authentication and authorization filter: who is asking (x509 client
 * certificate, bearer token, or anonymous), the authorization attributes kubelet derives from the
 * path (`nodes/proxy` by default; `stats`, `metrics`, `log`, `checkpoint` for their paths; with
 * fine-grained authorization `pods`, `healthz`, `configz`, `statusz` tried before `proxy`), and
 * kubelet's 401/403/500 answers.
 * Mirrors kubelet's pkg/kubelet/server/auth.go and `InstallAuthFilter` of server.go.
 * @module
 */
import * as log from "../../util/log.ts";

/** apiserver's `user.Info`. */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** What the authenticator sees of a request: the request and its connection's client chain. */
export interface RequestContext {
  request: Request;
  /** The client's certificates, leaf first (empty on a connection without one). */
  peerCertificates: import("node:crypto").X509Certificate[];
}

/** apiserver's `authenticator.Request`: a user, undefined when the request carries no credential. */
export interface Authenticator {
  authenticateRequest(ctx: RequestContext): Promise<UserInfo | undefined>;
}

/** apiserver's `authorizer.Attributes` for a resource request. */
export interface Attributes {
  user: UserInfo;
  verb: string;
  namespace: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  name: string;
  resourceRequest: boolean;
  path: string;
}

/** apiserver's `authorizer.Decision`. */
export type Decision = "Allow" | "Deny" | "NoOpinion";

/** apiserver's `authorizer.Authorizer`. */
export interface Authorizer {
  authorize(attrs: Attributes): Promise<{ decision: Decision; reason: string }>;
}

/** kubelet's paths that carry their own subresource. */
export const statsPath = "/stats/";
export const metricsPath = "/metrics";
export const logsPath = "/logs/";
export const checkpointPath = "/checkpoint/";
export const podsPath = "/pods";
export const runningPodsPath = "/runningpods/";
export const healthzPath = "/healthz";
export const configzPath = "/configz";
export const statuszPath = "/statusz";

/**
 * True when `subpath` is `path` or below it (kubelet's `isSubpath`).
 *
 * @example
 * ```ts
 * isSubpath("/stats/summary", "/stats/"); // true
 * isSubpath("/statsx", "/stats"); // false
 * ```
 */
export function isSubpath(subpath: string, path: string): boolean {
  if (path.endsWith("/")) path = path.slice(0, -1);
  return subpath === path || (subpath.startsWith(path) && subpath[path.length] === "/");
}

const apiVerbs: Record<string, string> = {
  POST: "create",
  GET: "get",
  PUT: "update",
  PATCH: "patch",
  DELETE: "delete",
};

/**
 * kubelet's `nodeAuthorizerAttributesGetter`: the attributes to authorize, in order; the request
 * is allowed when any of them is. `fineGrained` is the `KubeletFineGrainedAuthz` gate (on by
 * default since v1.33).
 *
 * @example
 * ```ts
 * const getter = newNodeAuthorizerAttributesGetter("node-1");
 * declare const user: UserInfo;
 * getter.getRequestAttributes(user, new Request("https://n/pods")).map((a) => a.subresource);
 * // ["pods", "proxy"]
 * ```
 */
export function newNodeAuthorizerAttributesGetter(
  nodeName: string,
  options: { fineGrained?: boolean } = {},
): { getRequestAttributes(user: UserInfo, request: Request): Attributes[] } {
  const fineGrained = options.fineGrained ?? true;
  return {
    getRequestAttributes(user: UserInfo, request: Request): Attributes[] {
      const verb = apiVerbs[request.method] ?? "";
      const path = new URL(request.url).pathname;
      const subresources: string[] = [];
      if (fineGrained) {
        if (isSubpath(path, podsPath)) subresources.push("pods");
        else if (isSubpath(path, healthzPath)) subresources.push("healthz");
        else if (isSubpath(path, configzPath)) subresources.push("configz");
        else if (isSubpath(path, statuszPath)) subresources.push("statusz");
        else if (isSubpath(path, runningPodsPath)) subresources.push("pods");
      }
      if (isSubpath(path, statsPath)) subresources.push("stats");
      else if (isSubpath(path, metricsPath)) subresources.push("metrics");
      else if (isSubpath(path, logsPath)) subresources.push("log");
      else if (isSubpath(path, checkpointPath)) subresources.push("checkpoint");
      else subresources.push("proxy");
      const attrs = subresources.map((subresource) => ({
        user,
        verb,
        namespace: "",
        apiGroup: "",
        apiVersion: "v1",
        resource: "nodes",
        subresource,
        name: nodeName,
        resourceRequest: true,
        path,
      }));
      log.V(5).info("Node request attributes", {
        user: user.name,
        verb,
        resource: "nodes",
        "subresource(s)": `[${subresources.join(" ")}]`,
      });
      return attrs;
    },
  };
}

/** kubelet's `AuthInterface`: an authenticator, the attribute getter and an authorizer. */
export interface AuthInterface extends Authenticator, Authorizer {
  getRequestAttributes(user: UserInfo, request: Request): Attributes[];
}

/**
 * kubelet's auth filter: authenticates, authorizes each attribute set in turn, and either calls
 * `next` or answers 401 `Unauthorized`, 403 `Forbidden (user=…, verb=…, resource=…,
 * subresource(s)=[…])` or 500 `Authorization error (…)`.
 *
 * @example
 * ```ts
 * declare const auth: AuthInterface;
 * const handler = withAuth(auth, () => new Response("ok"));
 * ```
 */
export function withAuth(
  auth: AuthInterface,
  next: (ctx: RequestContext) => Response | Promise<Response>,
): (ctx: RequestContext) => Promise<Response> {
  return async (ctx) => {
    let user: UserInfo | undefined;
    try {
      user = await auth.authenticateRequest(ctx);
    } catch (e) {
      log.error(e, "Unable to authenticate the request due to an error");
      return errorString(401, "Unauthorized");
    }
    if (!user) return errorString(401, "Unauthorized");
    const attrs = auth.getRequestAttributes(user, ctx.request);
    const subresources: string[] = [];
    for (const attr of attrs) {
      subresources.push(attr.subresource);
      let decision: Decision;
      try {
        ({ decision } = await auth.authorize(attr));
      } catch (e) {
        log.error(e, "Authorization error", {
          user: attr.user.name,
          verb: attr.verb,
          resource: attr.resource,
          subresource: attr.subresource,
        });
        return errorString(
          500,
          `Authorization error (user=${attr.user.name}, verb=${attr.verb}, resource=${attr.resource}, subresource=${attr.subresource})`,
        );
      }
      if (decision === "Allow") return await next(ctx);
    }
    const first = attrs[0];
    log.V(2).info("Forbidden", {
      user: first.user.name,
      verb: first.verb,
      resource: first.resource,
      "subresource(s)": `[${subresources.join(" ")}]`,
    });
    return errorString(
      403,
      `Forbidden (user=${first.user.name}, verb=${first.verb}, resource=${first.resource}, subresource(s)=[${
        subresources.join(" ")
      }])\n`,
    );
  };
}

// go-restful's WriteErrorString: the status and the text, as text/plain.
function errorString(status: number, text: string): Response {
  return new Response(text, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}
