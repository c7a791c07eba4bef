// Pull secrets end to end: the agent joins the real kube-apiserver (node authorizer and
// NodeRestriction on) with the project's containerd; a pod bound to it names a
// kubernetes.io/dockerconfigjson secret for the test registry (scripts/registry.sh: TLS, htpasswd).
// The agent reads the secret through the API as the node and pulls with it: the pod runs, and the
// cluster shows the Pulling/Pulled events. A pod without the secret shows ErrImagePull, then
// ImagePullBackOff, in its status. Skips, saying why, without root, containerd, the registry or
// the real kube-apiserver.
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { runKubelet, type RunningKubelet } from "../../src/cmd/probelet/app.ts";
import * as log from "../../src/util/log.ts";
import { realKubeApiServer } from "../testing/apiserver_targets.ts";
import { criEndpoint, integrationSkipReason, repoRoot } from "../integration/helpers.ts";
import { waitFor } from "./helpers.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} failed (exit ${out.code}):\n${text}`);
  return text;
}

async function registryEnv(): Promise<Record<string, string> | string> {
  try {
    return Object.fromEntries(
      (await run("bash", [`${repoRoot}/scripts/registry.sh`, "env"])).trim().split("\n")
        .map((l) => l.split("=", 2) as [string, string]),
    );
  } catch (e) {
    return `no test registry (bash scripts/registry.sh up): ${(e as Error).message.trim()}`;
  }
}

const real = await realKubeApiServer();
const criSkip = await integrationSkipReason();
const registry = criSkip ? criSkip : await registryEnv();
const skip = typeof real === "string" ? real : typeof registry === "string" ? registry : "";
if (skip) console.log(`image_pull_secrets_test: skipped: ${skip}`);

const namespace = "default";

function podOf(name: string, image: string, secrets: string[], nodeName: string): Json {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace },
    spec: {
      nodeName,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 1,
      imagePullSecrets: secrets.map((s) => ({ name: s })),
      containers: [{
        name: "app",
        image,
        imagePullPolicy: "Always",
        command: ["sleep", "3600"],
      }],
    },
  };
}

Deno.test({
  name: "a pod's imagePullSecrets, read through the API as the node, pull from the registry",
  ignore: skip !== "",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const api = real as Exclude<typeof real, string>;
    const reg = registry as Record<string, string>;
    const node = api.nodeName;
    const image = `${reg.PROBELET_REGISTRY}/probelet/busybox:1`;
    const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
    const dir = await Deno.makeTempDir({ prefix: "probelet-pullsecrets-" });
    const auths = {
      [reg.PROBELET_REGISTRY]: {
        auth: btoa(`${reg.PROBELET_REGISTRY_USER}:${reg.PROBELET_REGISTRY_PASSWORD}`),
      },
    };
    const secretPath = `/api/v1/namespaces/${namespace}/secrets`;
    const podsPath = `/api/v1/namespaces/${namespace}/pods`;
    const names = ["pull-with-secret", "pull-without-secret"];
    const cleanup = async () => {
      for (const name of names) {
        await api.admin("DELETE", `${podsPath}/${name}`, { body: { gracePeriodSeconds: 0 } });
      }
      await api.admin("DELETE", `${secretPath}/regcred`);
    };
    await cleanup();
    await waitFor("old test pods gone", async () => {
      for (const name of names) {
        if ((await api.admin("GET", `${podsPath}/${name}`)).status !== 404) return false;
      }
      return true;
    });
    let agent: RunningKubelet | undefined;
    try {
      const created = await api.admin("POST", secretPath, {
        body: {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "regcred", namespace },
          type: "kubernetes.io/dockerconfigjson",
          data: { ".dockerconfigjson": btoa(JSON.stringify({ auths })) },
        },
      });
      assertEquals(created.status, 201, JSON.stringify(created.body));
      agent = await runKubelet({
        kubeconfig: api.nodeKubeconfig,
        nodeName: node,
        containerRuntimeEndpoint: criEndpoint(),
        rootDir: join(dir, "root"),
        port: 0,
        address: "127.0.0.1",
        nodeStatusUpdateFrequencyMs: 1000,
        // Containers of a CRI runtime outlive the agent by default; not this test's.
        stopPodsOnExit: true,
      });
      for (const [name, secrets] of [[names[0], ["regcred"]], [names[1], []]] as const) {
        const res = await api.admin("POST", podsPath, {
          body: podOf(name, image, [...secrets], node),
        });
        assertEquals(res.status, 201, JSON.stringify(res.body));
      }

      // With the secret: running, and the cluster's events say it was pulled.
      const running = await waitFor("pull-with-secret Running", async () => {
        const res = await api.admin("GET", `${podsPath}/${names[0]}`);
        return res.body?.status?.phase === "Running" && res.body;
      }, { timeoutMs: 60_000 });
      assert(running.status.containerStatuses[0].state.running, "container running");
      const events = await waitFor("Pulling and Pulled events", async () => {
        const res = await api.admin(
          "GET",
          `/api/v1/namespaces/${namespace}/events?fieldSelector=involvedObject.name=${names[0]}`,
        );
        const items: Json[] = res.body?.items ?? [];
        const reasons = items.map((e) => `${e.reason}: ${e.message}`);
        return reasons.some((r) => r.startsWith(`Pulled: Successfully pulled image "${image}"`)) &&
          reasons;
      });
      assert(events.includes(`Pulling: Pulling image "${image}"`), JSON.stringify(events));

      // Without it: the registry refuses; ErrImagePull, then ImagePullBackOff, in the status.
      const seen = new Set<string>();
      await waitFor("pull-without-secret ErrImagePull then ImagePullBackOff", async () => {
        const res = await api.admin("GET", `${podsPath}/${names[1]}`);
        const waiting = res.body?.status?.containerStatuses?.[0]?.state?.waiting;
        if (waiting) {
          seen.add(waiting.reason);
          if (waiting.reason === "ErrImagePull") {
            assert(/401 Unauthorized/.test(waiting.message), waiting.message);
          }
        }
        return seen.has("ErrImagePull") && seen.has("ImagePullBackOff");
      }, { timeoutMs: 60_000, describe: () => [...seen] });

      // The node authorizer let the node read the secret its pod names: no request refused.
      assertEquals(await api.nodeRefusals(), []);
    } finally {
      await cleanup();
      await agent?.stop();
      await Deno.remove(dir, { recursive: true });
      if (quiet) log.setLogSink(quiet);
      await api.admin("DELETE", `/api/v1/nodes/${node}`);
      await api.admin(
        "DELETE",
        `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node}`,
      );
      const left = (await run("ctr", [
        "-a",
        criEndpoint().replace("unix://", ""),
        "-n",
        "k8s.io",
        "images",
        "ls",
        "-q",
      ])).split("\n").filter((n) => n.startsWith(`${reg.PROBELET_REGISTRY}/`));
      if (left.length > 0) {
        await run("ctr", [
          "-a",
          criEndpoint().replace("unix://", ""),
          "-n",
          "k8s.io",
          "images",
          "rm",
          ...left,
        ]);
      }
      await api.close();
    }
  },
});
