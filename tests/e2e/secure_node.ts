/**
 * What the e2e tests of kubelet's server share (kubectl logs, exec, top, serving certificates):
 * the node address the API server dials (scripts/kube-apiserver.sh puts 10.88.99.1 on its own
 * interface probelet-kube0), the local control plane's pki, why such a test must skip, and
 * kubectl run as a command.
 * @module
 */
import { join } from "node:path";
import type { Node } from "../../src/api/core/v1/mod.ts";
import type { RunKubeletOptions, RunningKubelet } from "../../src/cmd/probelet/app.ts";
import { criEndpoint, repoRoot } from "../integration/helpers.ts";
import type { ApiTarget } from "../testing/apiserver_targets.ts";
import { waitFor } from "./helpers.ts";

/** The node's InternalIP and listen address: one the API server may dial and proxy to. */
export const nodeIP: string = Deno.env.get("PROBELET_NODE_IP") ?? "10.88.99.1";

/** scripts/kube-apiserver.sh's certificates (its CA signs the API server's client certificate). */
export const kubeApiPki: string = join(repoRoot, ".run", "kube-apiserver", "pki");

/** Whether `cmd args` runs and exits 0. */
export function have(cmd: string, args: string[]): Promise<boolean> {
  return new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).output()
    .then((o) => o.success, () => false);
}

/**
 * Why a test against a node on the local control plane cannot run here ("" when it can):
 * `apiServer` is realKubeApiServer()'s answer (a string says why there is none), then kubectl,
 * the given extra tools, and the node address on an interface of this machine.
 */
export async function secureNodeSkipReason(
  apiServer: unknown,
  tools: string[] = [],
): Promise<string> {
  if (typeof apiServer === "string") return apiServer;
  if (!await have("kubectl", ["version", "--client"])) return "kubectl not found";
  for (const tool of tools) {
    if (!await have(tool, ["--version"]) && !await have(tool, ["version"])) {
      return `${tool} not found`;
    }
  }
  const onInterface = await Deno.readTextFile("/proc/net/fib_trie").then(
    (t) => t.includes(nodeIP),
    () => false,
  );
  return onInterface
    ? ""
    : `no interface has ${nodeIP} (scripts/kube-apiserver.sh up adds it as root)`;
}

/** What a command printed, and its exit code. */
export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `cmd args`, writing `stdin` (if any) to it and closing it. */
export async function run(cmd: string, args: string[], stdin?: string): Promise<CommandResult> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** kubectl with `kubeconfig` and a request timeout of `timeout` (20s), fed `stdin` if given. */
export function kubectl(
  kubeconfig: string,
  args: string[],
  options: { stdin?: string; timeout?: string } = {},
): Promise<CommandResult> {
  return run(
    "kubectl",
    ["--kubeconfig", kubeconfig, "--request-timeout", options.timeout ?? "20s", ...args],
    options.stdin,
  );
}

/** What the agent under test needs of the local control plane (realKubeApiServer()'s answer). */
export type SecureNodeApi = Pick<ApiTarget, "nodeKubeconfig" | "nodeName" | "admin">;

/**
 * The agent's options for a node the API server dials: pods from `<dir>/pods`, state in
 * `<dir>/root`, no read-only port, the secure port on `nodeIP` (a free port), clients checked
 * against the local CA, SubjectAccessReview and TokenReview; `overrides` win.
 */
export function secureAgentOptions(
  api: SecureNodeApi,
  dir: string,
  overrides: RunKubeletOptions = {},
): RunKubeletOptions {
  return {
    kubeconfig: api.nodeKubeconfig,
    nodeName: api.nodeName,
    containerRuntimeEndpoint: criEndpoint(),
    podManifestPath: join(dir, "pods"),
    rootDir: join(dir, "root"),
    port: -1,
    securePort: 0,
    address: nodeIP,
    nodeIP,
    clientCAFile: join(kubeApiPki, "ca.crt"),
    authorizationMode: "Webhook",
    authenticationTokenWebhook: true,
    nodeStatusUpdateFrequencyMs: 1000,
    ...overrides,
  };
}

/** Waits until the Node advertises `agent`'s secure port, and returns the Node. */
export function waitForSecurePort(api: SecureNodeApi, agent: RunningKubelet): Promise<Node> {
  const securePort = agent.secureServer!.port;
  return waitFor("node with the secure port", async () => {
    const res = await api.admin("GET", `/api/v1/nodes/${api.nodeName}`);
    const node = res.body as Node | undefined;
    return node?.status?.daemonEndpoints?.kubeletEndpoint?.Port === securePort && node;
  }) as Promise<Node>;
}
