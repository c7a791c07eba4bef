/**
 * API servers to run API-mode tests against, behind one shape: the double (HTTPS, client
 * certificates, kubeconfig files on disk) and the real kube-apiserver that
 * `bash scripts/kube-apiserver.sh up` starts (CI does; see .ci/run). A test written against
 * {@link ApiTarget} runs the same steps on both, so the double's fidelity is checked where the real
 * server exists and the wire bytes are asserted where it does not.
 *
 * The real server is found through the variables `scripts/kube-apiserver.sh env` prints
 * (PROBELET_KUBE_ADMIN_KUBECONFIG, PROBELET_KUBE_NODE_KUBECONFIG, PROBELET_NODE_NAME), falling back
 * to the script's default state folder `.run/kube-apiserver/`.
 * @module
 */
import { dirname, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { nodeRefusals } from "../../scripts/audit_refusals.ts";
import {
  type ApiServerDouble,
  kubeconfigYaml,
  makeTestPki,
  opensslAvailable,
  startApiServer,
} from "./apiserver/mod.ts";

/** A JSON answer. */
export interface ApiAnswer {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
}

/** Sends one request as a fixed user; `body` is JSON-encoded unless it is a string. */
export type Requester = (
  method: string,
  path: string,
  options?: { body?: unknown; contentType?: string },
) => Promise<ApiAnswer>;

/** An API server with an admin and a node identity. Always `close()` it. */
export interface ApiTarget {
  kind: "double" | "kube-apiserver";
  url: string;
  /** The node identity's name (the client certificate's `system:node:<nodeName>`). */
  nodeName: string;
  /** kubeconfig files on disk (client certificates inline). */
  nodeKubeconfig: string;
  adminKubeconfig: string;
  admin: Requester;
  node: Requester;
  /** The double itself (request log, hooks); undefined for the real server. */
  double?: ApiServerDouble;
  /**
   * Requests by a node identity that were answered 403 or 5xx since the target was opened, as
   * `"<code> <verb> <uri> <user>"`: from the double's request log, or the real server's audit log.
   */
  nodeRefusals(): Promise<string[]>;
  /**
   * Whether kube-controller-manager and kube-scheduler run next to the real server (CSR signing,
   * scheduling, node lifecycle); always false for the double.
   */
  controllersRunning(): Promise<boolean>;
  close(): Promise<void>;
}

interface Identity {
  server: string;
  ca: string;
  cert: string;
  key: string;
}

function requester(identity: Identity): { request: Requester; close(): void } {
  const client = Deno.createHttpClient({
    caCerts: [identity.ca],
    cert: identity.cert,
    key: identity.key,
  });
  let closed = false;
  return {
    request: async (method, path, options = {}) => {
      const headers: Record<string, string> = { Accept: "application/json" };
      let body: string | undefined;
      if (options.body !== undefined) {
        headers["Content-Type"] = options.contentType ?? "application/json";
        body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
      }
      const res = await fetch(identity.server + path, { method, headers, body, client });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : {};
      } catch {
        // Not JSON (e.g. a watch body): keep the text.
      }
      return { status: res.status, body: parsed };
    },
    close: () => {
      if (!closed) client.close();
      closed = true;
    },
  };
}

/** Reads a kubeconfig with inline `*-data` (as the script and kind write them). */
async function identityFrom(path: string): Promise<Identity> {
  const doc = parseYaml(await Deno.readTextFile(path)) as {
    "current-context": string;
    contexts: { name: string; context: { cluster: string; user: string } }[];
    clusters: { name: string; cluster: { server: string; "certificate-authority-data": string } }[];
    users: {
      name: string;
      user: { "client-certificate-data": string; "client-key-data": string };
    }[];
  };
  const context = doc.contexts.find((c) => c.name === doc["current-context"])!.context;
  const cluster = doc.clusters.find((c) => c.name === context.cluster)!.cluster;
  const user = doc.users.find((u) => u.name === context.user)!.user;
  const decode = (b64: string) =>
    new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
  return {
    server: cluster.server,
    ca: decode(cluster["certificate-authority-data"]),
    cert: decode(user["client-certificate-data"]),
    key: decode(user["client-key-data"]),
  };
}

/**
 * The double over HTTPS with a node identity `system:node:<nodeName>` and an admin
 * (`system:masters`), kubeconfig files written to a temporary folder.
 */
export async function startDoubleTarget(nodeName = "probelet-node"): Promise<ApiTarget> {
  const pki = await makeTestPki({
    admin: { cn: "probelet-admin", groups: ["system:masters"] },
    node: { cn: `system:node:${nodeName}`, groups: ["system:nodes"] },
  });
  const server = await startApiServer({
    tls: { cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca.cert },
  });
  const dir = await Deno.makeTempDir({ prefix: "probelet-double-" });
  const nodeKubeconfig = join(dir, "node.kubeconfig");
  const adminKubeconfig = join(dir, "admin.kubeconfig");
  await Deno.writeTextFile(
    nodeKubeconfig,
    kubeconfigYaml({
      server: server.url,
      caCert: pki.ca.cert,
      client: pki.clients.node,
      user: `system:node:${nodeName}`,
    }),
  );
  await Deno.writeTextFile(
    adminKubeconfig,
    kubeconfigYaml({
      server: server.url,
      caCert: pki.ca.cert,
      client: pki.clients.admin,
      user: "admin",
    }),
  );
  const admin = requester({ server: server.url, ca: pki.ca.cert, ...pki.clients.admin });
  const node = requester({ server: server.url, ca: pki.ca.cert, ...pki.clients.node });
  return {
    kind: "double",
    url: server.url,
    nodeName,
    nodeKubeconfig,
    adminKubeconfig,
    admin: admin.request,
    node: node.request,
    double: server.double,
    controllersRunning: () => Promise.resolve(false),
    nodeRefusals: () =>
      Promise.resolve(
        server.double.requests
          .filter((r) => r.user.startsWith("system:node:") && (r.status === 403 || r.status >= 500))
          .map((r) => `${r.status} ${r.verb} ${r.path}${r.query ? `?${r.query}` : ""} ${r.user}`),
      ),
    close: async () => {
      admin.close();
      node.close();
      await server.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const repoRoot = new URL("../../", import.meta.url).pathname;

/**
 * The real kube-apiserver started by scripts/kube-apiserver.sh, or the reason it cannot be used
 * here (a string, for the test's skip message).
 */
export async function realKubeApiServer(): Promise<ApiTarget | string> {
  const state = join(repoRoot, ".run", "kube-apiserver");
  const adminKubeconfig = Deno.env.get("PROBELET_KUBE_ADMIN_KUBECONFIG") ??
    join(state, "admin.kubeconfig");
  const nodeKubeconfig = Deno.env.get("PROBELET_KUBE_NODE_KUBECONFIG") ??
    join(state, "node.kubeconfig");
  const nodeName = Deno.env.get("PROBELET_NODE_NAME") ?? "probelet-node";
  try {
    await Deno.stat(adminKubeconfig);
    await Deno.stat(nodeKubeconfig);
  } catch {
    return `no real kube-apiserver: ${adminKubeconfig} not found (run \`bash scripts/kube-apiserver.sh up\`; CI does)`;
  }
  const adminId = await identityFrom(adminKubeconfig);
  const admin = requester(adminId);
  try {
    const ready = await admin.request("GET", "/readyz");
    if (ready.status !== 200) throw new Error(`/readyz answered ${ready.status}`);
  } catch (e) {
    admin.close();
    return `no real kube-apiserver: ${adminId.server} not ready (${
      (e as Error).message
    }); start it with \`bash scripts/kube-apiserver.sh up\``;
  }
  const node = requester(await identityFrom(nodeKubeconfig));
  const auditLog = Deno.env.get("PROBELET_KUBE_AUDIT_LOG") ?? join(state, "audit.log");
  const auditStart = await Deno.stat(auditLog).then((s) => s.size, () => -1);
  return {
    kind: "kube-apiserver",
    url: adminId.server,
    nodeName,
    nodeKubeconfig,
    adminKubeconfig,
    admin: admin.request,
    node: node.request,
    controllersRunning: async () => {
      // The script keeps their pid files next to the kubeconfigs.
      for (const name of ["kube-controller-manager", "kube-scheduler"]) {
        try {
          const pid = (await Deno.readTextFile(join(dirname(adminKubeconfig), `${name}.pid`)))
            .trim();
          const exe = await Deno.readLink(`/proc/${pid}/exe`);
          if (!exe.endsWith(`/${name}`)) return false;
        } catch {
          return false;
        }
      }
      return true;
    },
    nodeRefusals: async () => {
      if (auditStart < 0) {
        throw new Error(`no audit log at ${auditLog}: restart the server with the current script`);
      }
      const bytes = await Deno.readFile(auditLog);
      return nodeRefusals(new TextDecoder().decode(bytes.subarray(auditStart)));
    },
    close: () => {
      admin.close();
      node.close();
      return Promise.resolve();
    },
  };
}

/** True when openssl exists (the double's HTTPS target needs it to make certificates). */
export { opensslAvailable };
