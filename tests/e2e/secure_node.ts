/**
 * What the e2e tests of kubelet's server share (kubectl logs, exec, top, serving certificates):
 * the node address the API server dials (scripts/kube-apiserver.sh puts 10.88.99.1 on its own
 * interface probelet-kube0), the local control plane's pki, why such a test must skip, and
 * kubectl run as a command.
 * @module
 */
import { join } from "node:path";
import { repoRoot } from "../integration/helpers.ts";

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
