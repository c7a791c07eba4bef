/**
 * The differential suite: the same scenario pods on a probelet node and on a real kubelet v1.36.3
 * node of the same local control plane (scripts/kube-apiserver.sh up, scripts/kubelet.sh up), the
 * API server's view of each (pod status and the pod's events) normalised and compared path by
 * path (tests/e2e/differential.ts); the suite fails on any difference that
 * tests/e2e/differential_allow_list.ts does not allow, printing a readable diff. Scenarios mirror
 * kubelet's e2e "Probing container" cases and its pod lifecycle cases (init containers and sidecars,
 * restart policies, crash loops, Jobs, deletes, readiness gates, admission, termination messages,
 * env, security context and volumes). Each scenario's pod lives in a namespace per node (same pod
 * name), and all scenarios run at once. probelet runs in-process on the private containerd; kubelet
 * on its own containerd (its housekeeping kills sandboxes it did not start). Skipped, saying why,
 * without root, containerd, the control plane or the kubelet node.
 */
import { ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { runKubelet, type RunningKubelet } from "../../src/cmd/probelet/app.ts";
import * as log from "../../src/util/log.ts";
import { type ApiTarget, realKubeApiServer } from "../testing/apiserver_targets.ts";
import { criEndpoint, integrationSkipReason, repoRoot, testImage } from "../integration/helpers.ts";
import { parse as parseYaml } from "yaml";
import { waitFor } from "./helpers.ts";
import {
  compareViews,
  type Difference,
  formatDifferences,
  type MaskNames,
  nodeView,
  podView,
  statusHistory,
} from "./differential.ts";
import { differentialAllowList } from "./differential_allow_list.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const kubeletNode = Deno.env.get("PROBELET_KUBELET_NODE_NAME") ?? "kubelet-oracle";
const nodeIP = Deno.env.get("PROBELET_NODE_IP") ?? "10.88.99.1";
const pki = join(repoRoot, ".run", "kube-apiserver", "pki");
/**
 * PROBELET_DIFFERENTIAL_SCENARIOS: a comma-separated list of scenario names to run (all when
 * unset), to repeat the scenarios a change affects; allow-list entries of the others then match
 * nothing, so that report is left out.
 */
const onlyList = Deno.env.get("PROBELET_DIFFERENTIAL_SCENARIOS")?.split(",")
  .map((s) => s.trim()).filter((s) => s !== "");
const only = onlyList === undefined ? undefined : new Set(onlyList);

async function skipReason(): Promise<string> {
  const cri = await integrationSkipReason();
  if (cri) return cri;
  const real = await realKubeApiServer();
  if (typeof real === "string") return real;
  try {
    const node = await real.admin("GET", `/api/v1/nodes/${kubeletNode}`);
    const ready = node.body?.status?.conditions?.find((c: Json) => c.type === "Ready")?.status;
    // A Node left behind by a kubelet that died stays Ready until a controller notices: its lease
    // says whether it still runs.
    const lease = await real.admin(
      "GET",
      `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${kubeletNode}`,
    );
    const renewed = Date.parse(lease.body?.spec?.renewTime ?? "");
    if (ready !== "True" || !(Date.now() - renewed < 60_000)) {
      return `no running kubelet node ${kubeletNode} (start it with \`bash scripts/kubelet.sh up\`; ` +
        `CI does)`;
    }
  } finally {
    await real.close();
  }
  const trie = await Deno.readTextFile("/proc/net/fib_trie").catch(() => "");
  if (!trie.includes(nodeIP)) return `no interface has ${nodeIP} (kube-apiserver.sh up adds it)`;
  return "";
}

const skip = await skipReason();
if (skip) console.log(`tests/e2e/differential_test.ts: skipped: ${skip}`);

/** What a scenario may do while it runs on one node. */
interface ScenarioContext {
  api: ApiTarget;
  namespace: string;
  /** The latest pod seen by the watcher (the last one before it went, once deleted). */
  pod(): Json | undefined;
  /** Whether the pod was seen and is gone now. */
  gone(): boolean;
  /** Events whose involvedObject is the pod. */
  events(): Promise<Json[]>;
}

/** One scenario: its objects, what happens to them, and when the view is final. */
interface Scenario {
  name: string;
  /** The pod (nodeName filled in per node); or a Job, whose pod the watcher finds by label. */
  object(nodeName: string): Json;
  /** Other objects created first in the namespace (config maps, secrets). */
  setup?: Json[];
  /**
   * probelet refuses the pod with this text (a field it does not support yet): the scenario then
   * checks that refusal and prints what kubelet did, instead of comparing. When probelet learns
   * the field the check fails, and the scenario becomes an ordinary one.
   */
  probeletRefuses?: string;
  /**
   * Event reasons to wait for (at most 15 s) before the events are read: an event may reach the
   * API server after the status it explains, or after the pod is gone.
   */
  awaitEvents?: string[];
  /** Needs kube-controller-manager (Jobs). */
  needsControllers?: boolean;
  /** Actions once the pod exists, e.g. a delete after it is Ready. */
  act?(ctx: ScenarioContext): Promise<void>;
  /** The view is final (checked on the watcher's latest pod and the events). */
  done(pod: Json | undefined, events: Json[], ctx: ScenarioContext): boolean;
  timeoutMs?: number;
}

const sh = (script: string) => ["sh", "-c", script];

function podOf(name: string, spec: Json, nodeName: string, extra: Json = {}): Json {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, ...extra.metadata },
    spec: {
      nodeName,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 2,
      ...spec,
    },
  };
}

function container(name: string, command: string[], extra: Json = {}): Json {
  return { name, image: testImage, imagePullPolicy: "Never", command, ...extra };
}

const condition = (pod: Json, type: string) =>
  pod?.status?.conditions?.find((c: Json) => c.type === type)?.status;
const containerStatus = (pod: Json, name = "app") =>
  pod?.status?.containerStatuses?.find((c: Json) => c.name === name);
const countOf = (events: Json[], reason: string) =>
  events.filter((e) => e.reason === reason).reduce(
    (n, e) => n + (e.series?.count ?? e.count ?? 1),
    0,
  );

/** Every container start in the status (restarts + 1 where it ran) has its Started event. */
function startsExplained(pod: Json, events: Json[]): boolean {
  const statuses = [
    ...(pod?.status?.initContainerStatuses ?? []),
    ...(pod?.status?.containerStatuses ?? []),
  ];
  return statuses.every((cs: Json) => {
    const ran = cs.state?.running || cs.state?.terminated || cs.lastState?.terminated;
    const started = events.filter((e) =>
      e.reason === "Started" && e.involvedObject?.fieldPath?.endsWith(`{${cs.name}}`)
    ).reduce((n, e) => n + (e.series?.count ?? e.count ?? 1), 0);
    return !ran || started >= cs.restartCount + 1;
  });
}

// A probe that fails for the container's first instance only: the first run leaves a marker in an
// emptyDir (which outlives restarts), the second passes. The end state is then stable: restarted
// once, Running and Ready.
const firstRunFails = (extra: string) =>
  `if [ -f /data/started ]; then touch /data/restarted; ${extra} fi; touch /data/started; `;
const dataVolume = { volumes: [{ name: "data", emptyDir: {} }] };
const dataMount = { volumeMounts: [{ name: "data", mountPath: "/data" }] };

const scenarios: Scenario[] = [
  {
    name: "liveness-exec-restart",
    object: (node) =>
      podOf("p", {
        ...dataVolume,
        containers: [container("app", sh(firstRunFails("") + "exec sleep 3600"), {
          ...dataMount,
          livenessProbe: {
            exec: { command: ["test", "-f", "/data/restarted"] },
            periodSeconds: 1,
            failureThreshold: 1,
          },
        })],
      }, node),
    done: (pod) => containerStatus(pod)?.restartCount === 1 && condition(pod, "Ready") === "True",
  },
  {
    name: "liveness-http-restart",
    object: (node) =>
      podOf("p", {
        ...dataVolume,
        containers: [container(
          "app",
          sh(
            "mkdir -p /data/www; " + firstRunFails("echo ok > /data/www/healthz;") +
              "exec httpd -f -p 8080 -h /data/www",
          ),
          {
            ...dataMount,
            livenessProbe: {
              httpGet: { path: "/healthz", port: 8080 },
              // httpd listens within milliseconds: after the delay every failure is the 404.
              initialDelaySeconds: 2,
              timeoutSeconds: 5,
              periodSeconds: 1,
              failureThreshold: 2,
            },
          },
        )],
      }, node),
    done: (pod) => containerStatus(pod)?.restartCount === 1 && condition(pod, "Ready") === "True",
  },
  {
    name: "readiness-failing",
    object: (node) =>
      podOf("p", {
        containers: [container("app", ["sleep", "3600"], {
          readinessProbe: { exec: { command: ["false"] }, periodSeconds: 1 },
        })],
      }, node),
    done: (pod, events) =>
      containerStatus(pod)?.state?.running !== undefined && countOf(events, "Unhealthy") >= 3,
  },
  {
    name: "startup-gates-liveness",
    object: (node) =>
      podOf("p", {
        containers: [container("app", sh("sleep 3; touch /tmp/up; exec sleep 3600"), {
          startupProbe: {
            exec: { command: ["test", "-f", "/tmp/up"] },
            periodSeconds: 1,
            failureThreshold: 30,
          },
          livenessProbe: {
            exec: { command: ["test", "-f", "/tmp/up"] },
            periodSeconds: 1,
            failureThreshold: 1,
          },
        })],
      }, node),
    done: (pod) => condition(pod, "Ready") === "True",
  },
  {
    name: "init-and-sidecar",
    object: (node) =>
      podOf("p", {
        initContainers: [
          container("init", sh("echo init done")),
          container("sidecar", ["sleep", "3600"], {
            restartPolicy: "Always",
            readinessProbe: { exec: { command: ["true"] }, periodSeconds: 1 },
          }),
        ],
        containers: [container("app", ["sleep", "3600"])],
      }, node),
    done: (pod) => condition(pod, "Ready") === "True",
  },
  {
    name: "never-fails",
    object: (node) =>
      podOf("p", { restartPolicy: "Never", containers: [container("app", sh("exit 3"))] }, node),
    done: (pod) => pod?.status?.phase === "Failed",
  },
  {
    name: "never-succeeds",
    object: (node) =>
      podOf("p", { restartPolicy: "Never", containers: [container("app", sh("exit 0"))] }, node),
    done: (pod) => pod?.status?.phase === "Succeeded",
  },
  {
    name: "onfailure-fails-once",
    object: (node) =>
      podOf("p", {
        ...dataVolume,
        restartPolicy: "OnFailure",
        containers: [container(
          "app",
          sh("if [ -f /data/x ]; then exit 0; fi; touch /data/x; exit 1"),
          dataMount,
        )],
      }, node),
    done: (pod) => pod?.status?.phase === "Succeeded",
  },
  {
    name: "crash-loop",
    object: (node) => podOf("p", { containers: [container("app", sh("exit 1"))] }, node),
    done: (pod) => (containerStatus(pod)?.restartCount ?? 0) >= 2,
    timeoutMs: 180_000,
  },
  {
    name: "job",
    needsControllers: true,
    object: (node) => ({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "job" },
      spec: {
        backoffLimit: 0,
        template: {
          spec: podOf("", {
            restartPolicy: "Never",
            containers: [container("app", sh("echo done"))],
          }, node).spec,
        },
      },
    }),
    done: (pod) => pod?.status?.phase === "Succeeded",
  },
  {
    name: "graceful-delete",
    awaitEvents: ["Killing"],
    object: (node) =>
      podOf("p", {
        terminationGracePeriodSeconds: 5,
        containers: [container("app", sh("trap 'exit 0' TERM; while :; do sleep 0.2; done"))],
      }, node),
    act: async (ctx) => {
      await waitFor("Ready", () => condition(ctx.pod(), "Ready") === "True", {
        timeoutMs: 120_000,
      });
      await ctx.api.admin("DELETE", `/api/v1/namespaces/${ctx.namespace}/pods/p`);
    },
    done: (_pod, _events, ctx) => ctx.gone(),
  },
  {
    name: "forced-delete",
    awaitEvents: ["Killing"],
    object: (node) =>
      podOf("p", {
        terminationGracePeriodSeconds: 30,
        containers: [container("app", ["sleep", "3600"])],
      }, node),
    act: async (ctx) => {
      await waitFor("Ready", () => condition(ctx.pod(), "Ready") === "True", {
        timeoutMs: 120_000,
      });
      await ctx.api.admin("DELETE", `/api/v1/namespaces/${ctx.namespace}/pods/p`, {
        body: { kind: "DeleteOptions", apiVersion: "v1", gracePeriodSeconds: 0 },
      });
    },
    done: (_pod, _events, ctx) => ctx.gone(),
  },
  {
    name: "prestop-hook-delete",
    awaitEvents: ["Killing"],
    object: (node) =>
      podOf("p", {
        // Long enough for the hook on a loaded machine; the container ends at once on TERM.
        terminationGracePeriodSeconds: 30,
        containers: [container("app", sh("trap 'exit 0' TERM; while :; do sleep 0.2; done"), {
          lifecycle: {
            preStop: { exec: { command: sh("echo stopped by hook > /dev/termination-log") } },
          },
        })],
      }, node),
    act: async (ctx) => {
      await waitFor("Ready", () => condition(ctx.pod(), "Ready") === "True", {
        timeoutMs: 120_000,
      });
      await ctx.api.admin("DELETE", `/api/v1/namespaces/${ctx.namespace}/pods/p`);
    },
    done: (_pod, _events, ctx) => ctx.gone(),
  },
  {
    name: "poststart-hook-fails",
    awaitEvents: ["FailedPostStartHook", "Killing"],
    object: (node) =>
      podOf("p", {
        restartPolicy: "Never",
        containers: [container("app", ["sleep", "3600"], {
          lifecycle: { postStart: { exec: { command: sh("echo hook failed; exit 7") } } },
        })],
      }, node),
    done: (pod) => pod?.status?.phase === "Failed",
  },
  {
    name: "image-never-pull-missing",
    awaitEvents: ["Failed"],
    object: (node) =>
      podOf("p", {
        containers: [{
          name: "app",
          image: "probelet.local/missing:1",
          imagePullPolicy: "Never",
          command: ["sleep", "3600"],
        }],
      }, node),
    done: (pod, events) =>
      containerStatus(pod)?.state?.waiting?.reason === "ErrImageNeverPull" &&
      countOf(events, "ErrImageNeverPull") >= 1,
  },
  {
    name: "readiness-gate",
    object: (node) =>
      podOf("p", {
        readinessGates: [{ conditionType: "probelet.io/gate" }],
        containers: [container("app", ["sleep", "3600"])],
      }, node),
    act: async (ctx) => {
      await waitFor(
        "ContainersReady",
        () => condition(ctx.pod(), "ContainersReady") === "True",
        { timeoutMs: 120_000 },
      );
      const answer = await ctx.api.admin(
        "PATCH",
        `/api/v1/namespaces/${ctx.namespace}/pods/p/status`,
        {
          body: { status: { conditions: [{ type: "probelet.io/gate", status: "True" }] } },
          contentType: "application/strategic-merge-patch+json",
        },
      );
      assert(answer.status === 200, JSON.stringify(answer.body));
    },
    done: (pod) => condition(pod, "Ready") === "True",
  },
  {
    name: "admission-node-selector",
    object: (node) =>
      podOf("p", {
        nodeSelector: { "probelet.io/no-such-label": "x" },
        containers: [container("app", ["sleep", "3600"])],
      }, node),
    done: (pod) => pod?.status?.phase === "Failed",
  },
  {
    name: "admission-os-windows",
    object: (node) =>
      podOf("p", {
        os: { name: "windows" },
        containers: [container("app", ["sleep", "3600"])],
      }, node),
    done: (pod) => pod?.status?.phase === "Failed",
  },
  {
    // Both nodes fail the pod at the deadline (DeadlineExceeded) and kill its container (sleep
    // ignores SIGTERM: killed at the end of the 1 s grace period).
    name: "active-deadline",
    awaitEvents: ["DeadlineExceeded", "Killing"],
    object: (node) =>
      podOf("p", {
        activeDeadlineSeconds: 3,
        terminationGracePeriodSeconds: 1,
        containers: [container("app", ["sleep", "3600"])],
      }, node),
    done: (pod) =>
      pod?.status?.phase === "Failed" &&
      containerStatus(pod)?.state?.terminated !== undefined,
  },
  {
    // Both nodes pass stdin and tty to containerd, which gives the container a terminal.
    name: "stdin-tty",
    object: (node) =>
      podOf("p", {
        restartPolicy: "Never",
        containers: [container("app", sh("[ -t 0 ] && echo tty > /dev/termination-log"), {
          stdin: true,
          tty: true,
        })],
      }, node),
    done: (pod) => ["Succeeded", "Failed"].includes(pod?.status?.phase),
  },
  {
    name: "termination-message-file",
    object: (node) =>
      podOf("p", {
        restartPolicy: "Never",
        containers: [container("app", sh("echo bye from file > /dev/termination-log; exit 4"))],
      }, node),
    done: (pod) => pod?.status?.phase === "Failed",
  },
  {
    name: "termination-message-fallback-to-logs",
    object: (node) =>
      podOf("p", {
        restartPolicy: "Never",
        containers: [container("app", sh("echo line one; echo line two; exit 2"), {
          terminationMessagePolicy: "FallbackToLogsOnError",
        })],
      }, node),
    done: (pod) => pod?.status?.phase === "Failed",
  },
  {
    name: "env",
    object: (node) =>
      podOf("p", {
        restartPolicy: "Never",
        containers: [container(
          "app",
          sh("env | grep '^X_' | sort > /dev/termination-log"),
          {
            env: [
              { name: "X_PLAIN", value: "plain" },
              { name: "X_EXPANDED", value: "$(X_PLAIN)-expanded" },
              { name: "X_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
              {
                name: "X_LIMIT",
                valueFrom: { resourceFieldRef: { resource: "limits.memory", divisor: "1Mi" } },
              },
            ],
            resources: { limits: { memory: "64Mi" } },
          },
        )],
      }, node),
    done: (pod) => pod?.status?.phase === "Succeeded",
  },
  {
    name: "security-context",
    object: (node) =>
      podOf("p", {
        restartPolicy: "Never",
        securityContext: { runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000] },
        containers: [container(
          "app",
          sh(
            "id > /dev/termination-log; touch /x 2>/dev/null || echo read-only >> /dev/termination-log",
          ),
          { securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false } },
        )],
      }, node),
    done: (pod) => pod?.status?.phase === "Succeeded",
  },
  {
    name: "dns-hosts-hostname",
    object: (node) =>
      podOf("p", {
        restartPolicy: "Never",
        hostname: "web",
        subdomain: "svc",
        containers: [container(
          "app",
          sh("{ cat /etc/resolv.conf; cat /etc/hosts; hostname; } > /dev/termination-log"),
        )],
      }, node),
    done: (pod) => pod?.status?.phase === "Succeeded",
  },
  {
    name: "downward-api-volume",
    object: (node) =>
      podOf(
        "p",
        {
          restartPolicy: "Never",
          volumes: [{
            name: "info",
            downwardAPI: {
              items: [
                { path: "labels", fieldRef: { fieldPath: "metadata.labels" } },
                { path: "name", fieldRef: { fieldPath: "metadata.name" } },
                {
                  path: "cpu",
                  resourceFieldRef: { containerName: "app", resource: "limits.cpu", divisor: "1m" },
                },
              ],
            },
          }],
          containers: [container(
            "app",
            sh(
              "{ cat /info/labels; echo; cat /info/name; echo; cat /info/cpu; } > /dev/termination-log",
            ),
            {
              volumeMounts: [{ name: "info", mountPath: "/info" }],
              resources: { limits: { cpu: "250m" } },
            },
          )],
        },
        node,
        { metadata: { labels: { app: "differential", tier: "test" } } },
      ),
    done: (pod) => pod?.status?.phase === "Succeeded",
  },
  {
    name: "volumes",
    setup: [
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" }, data: { greeting: "hi" } },
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "sec" },
        stringData: { password: "s3cr3t" },
      },
    ],
    object: (node) =>
      podOf("p", {
        restartPolicy: "Never",
        volumes: [
          { name: "cfg", configMap: { name: "cfg" } },
          { name: "sec", secret: { secretName: "sec", defaultMode: 0o400 } },
          { name: "scratch", emptyDir: {} },
        ],
        containers: [container(
          "app",
          sh(
            "{ cat /cfg/greeting; echo; cat /sec/password; echo; echo x > /scratch/f && " +
              "cat /scratch/f; stat -c %a /sec/password; } > /dev/termination-log",
          ),
          {
            volumeMounts: [
              { name: "cfg", mountPath: "/cfg" },
              { name: "sec", mountPath: "/sec" },
              { name: "scratch", mountPath: "/scratch" },
            ],
          },
        )],
      }, node),
    done: (pod) => pod?.status?.phase === "Succeeded",
  },
];

/** The admin's HTTP client and server, from its kubeconfig (certificates inline). */
async function adminClient(
  kubeconfig: string,
): Promise<{ server: string; client: Deno.HttpClient }> {
  const doc = parseYaml(await Deno.readTextFile(kubeconfig)) as Json;
  const context = doc.contexts.find((c: Json) => c.name === doc["current-context"]).context;
  const cluster = doc.clusters.find((c: Json) => c.name === context.cluster).cluster;
  const user = doc.users.find((u: Json) => u.name === context.user).user;
  const decode = (b64: string) => new TextDecoder().decode(decodeBase64(b64));
  return {
    server: cluster.server,
    client: Deno.createHttpClient({
      caCerts: [decode(cluster["certificate-authority-data"])],
      cert: decode(user["client-certificate-data"]),
      key: decode(user["client-key-data"]),
    }),
  };
}

function decodeBase64(b64: string): Uint8Array {
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

/**
 * Watches one namespace's pods and keeps the latest version of each: every update is seen (a
 * terminal status posted just before the delete, too), and a deleted pod keeps the object of its
 * DELETED event.
 */
class NamespaceWatcher {
  latest = new Map<string, Json>();
  /** Every status each pod was stored with, in order. */
  statuses = new Map<string, Json[]>();
  goneNames = new Set<string>();
  #abort = new AbortController();
  #done: Promise<void> = Promise.resolve();

  /**
   * Starts watching from the namespace's current resource version, and returns once the watch is
   * established: nothing created afterwards is missed.
   */
  async start(admin: { server: string; client: Deno.HttpClient }, namespace: string) {
    const path = `${admin.server}/api/v1/namespaces/${namespace}/pods`;
    const list = await fetch(path, { client: admin.client });
    const resourceVersion = (await list.json()).metadata.resourceVersion;
    const res = await fetch(`${path}?watch=1&resourceVersion=${resourceVersion}`, {
      client: admin.client,
      signal: this.#abort.signal,
    });
    this.#done = this.#read(res).catch(() => {});
  }

  async #read(res: Response) {
    let buffered = "";
    for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      let newline;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (!line.trim()) continue;
        const event = JSON.parse(line);
        const pod = event.object;
        if (pod?.kind !== "Pod") continue;
        this.latest.set(pod.metadata.name, pod);
        const seen = this.statuses.get(pod.metadata.name) ?? [];
        seen.push(pod.status);
        this.statuses.set(pod.metadata.name, seen);
        if (event.type === "DELETED") this.goneNames.add(pod.metadata.name);
      }
    }
  }

  /** The scenario's pod: `p`, or the first pod of a Job. */
  podName(): string | undefined {
    return [...this.latest.keys()][0];
  }

  async stop() {
    this.#abort.abort();
    await this.#done;
  }
}

interface NodeRun {
  pod: Json | undefined;
  history: Json[];
  events: Json[];
  names: MaskNames;
  error?: string;
}

async function runOnNode(
  api: ApiTarget,
  admin: { server: string; client: Deno.HttpClient },
  scenario: Scenario,
  namespace: string,
  nodeName: string,
): Promise<NodeRun> {
  await api.admin("POST", "/api/v1/namespaces", {
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
  });
  // The ServiceAccount admission plugin refuses pods until the namespace has its default account.
  await api.admin("POST", `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    body: { metadata: { name: "default" } },
  });
  for (const object of scenario.setup ?? []) {
    const plural = object.kind === "ConfigMap" ? "configmaps" : "secrets";
    await api.admin("POST", `/api/v1/namespaces/${namespace}/${plural}`, { body: object });
  }
  const watcher = new NamespaceWatcher();
  await watcher.start(admin, namespace);
  const ctx: ScenarioContext = {
    api,
    namespace,
    pod: () => {
      const name = watcher.podName();
      return name === undefined ? undefined : watcher.latest.get(name);
    },
    gone: () => {
      const name = watcher.podName();
      return name !== undefined && watcher.goneNames.has(name);
    },
    events: async () => {
      const name = watcher.podName();
      if (name === undefined) return [];
      const answer = await api.admin(
        "GET",
        `/api/v1/namespaces/${namespace}/events?fieldSelector=involvedObject.name=${name}`,
      );
      return (answer.body?.items ?? []).filter((e: Json) => e.involvedObject?.kind === "Pod");
    },
  };
  const object = scenario.object(nodeName);
  const path = object.kind === "Job"
    ? `/apis/batch/v1/namespaces/${namespace}/jobs`
    : `/api/v1/namespaces/${namespace}/pods`;
  let events: Json[] = [];
  try {
    const created = await api.admin("POST", path, { body: object });
    if (created.status !== 201) throw new Error(`create: ${JSON.stringify(created.body)}`);
    if (scenario.act) await scenario.act(ctx);
    await waitFor(`scenario ${scenario.name} on ${nodeName} done`, async () => {
      events = await ctx.events();
      return scenario.done(ctx.pod(), events, ctx);
    }, {
      timeoutMs: scenario.timeoutMs ?? 120_000,
      describe: () => ({ status: ctx.pod()?.status, events: events.map((e) => e.message) }),
    });
    // A terminal pod's first terminal status may be one generated before its sandbox was stopped
    // (the status manager sends the version it holds when the pod worker completes
    // SyncTerminatingPod, on either node); the statuses after it are generated from the stopped
    // sandbox (PodReadyToStartContainers False): wait (bounded) until the node posted one.
    if (["Succeeded", "Failed"].includes(ctx.pod()?.status?.phase)) {
      await waitFor(
        "the status generated after StopPodSandbox",
        () => condition(ctx.pod(), "PodReadyToStartContainers") !== "True",
        { timeoutMs: 15_000 },
      ).catch(() => {});
    }
    // Events are posted after the status they explain: wait (bounded) until every container start
    // the status shows has its Started event, and the awaited events are there, then take the
    // events as they are.
    await waitFor("the Started events of every start", async () => {
      events = await ctx.events();
      return startsExplained(ctx.pod(), events) &&
        (scenario.awaitEvents ?? []).every((reason) => countOf(events, reason) > 0);
    }, { timeoutMs: 15_000 }).catch(() => {});
    // A Job's pod has a generated name; a pod of ours is named alike on both nodes.
    const podName = object.kind === "Job" ? watcher.podName() : undefined;
    const history = watcher.statuses.get(watcher.podName() ?? "") ?? [];
    return { pod: ctx.pod(), history, events, names: { namespace, nodeName, podName } };
  } catch (e) {
    return {
      pod: ctx.pod(),
      history: [],
      events,
      names: { namespace, nodeName },
      error: (e as Error).message,
    };
  } finally {
    await watcher.stop();
  }
}

/**
 * A scenario probelet refuses: its pod failed at admission with the text of probeletRefuses, a
 * PodFeatureUnsupported event says the same, and no container ran; kubelet's outcome is printed.
 */
function checkRefusal(scenario: Scenario, kubelet: NodeRun, probelet: NodeRun) {
  const status = probelet.pod?.status;
  const message = `Pod was rejected: ${scenario.probeletRefuses}`;
  assert(
    status?.phase === "Failed" && status?.reason === "PodFeatureUnsupported" &&
      status?.message === message,
    `probelet did not refuse as expected: ${JSON.stringify(status)}`,
  );
  assert(
    probelet.events.some((e) =>
      e.reason === "PodFeatureUnsupported" && e.message === scenario.probeletRefuses
    ),
    `no PodFeatureUnsupported event: ${JSON.stringify(probelet.events.map((e) => e.message))}`,
  );
  assert(!probelet.events.some((e) => e.reason === "Started"), "a container started");
  const k = kubelet.pod?.status;
  console.log(
    `differential: ${scenario.name}: probelet refuses (${scenario.probeletRefuses}); kubelet: ` +
      `${k?.phase}${k?.reason ? ` ${k.reason}` : ""}${k?.message ? ` "${k.message}"` : ""}, ` +
      statusHistory(kubelet.history),
  );
}

/** Prints the allowed differences when asked, and throws on any other. */
function report(scenario: string, diffs: Difference[], used: Set<unknown>) {
  for (const d of diffs) used.add(d.allowedBy);
  if (diffs.length > 0 && Deno.env.get("PROBELET_DIFFERENTIAL_VERBOSE") === "1") {
    console.log(formatDifferences(scenario, diffs));
  }
  const refused = diffs.filter((d) => !d.allowedBy);
  if (refused.length > 0) {
    throw new Error(
      `${refused.length} difference(s) not in the allow-list:\n` +
        formatDifferences(scenario, refused),
    );
  }
}

Deno.test({
  name: "differential: probelet and kubelet v1.36.3 give the API server the same view",
  ignore: skip !== "",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const real = await realKubeApiServer();
    if (typeof real === "string") throw new Error(real);
    const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
    const dir = await Deno.makeTempDir({ prefix: "probelet-differential-" });
    const stamp = Date.now().toString(36);
    const namespaces: string[] = [];
    let agent: RunningKubelet | undefined;
    const admin = await adminClient(real.adminKubeconfig);
    try {
      // kubelet's port, on our own address, so both nodes advertise the same endpoint.
      const kubeletPort = (await real.admin("GET", `/api/v1/nodes/${kubeletNode}`)).body?.status
        ?.daemonEndpoints?.kubeletEndpoint?.Port ?? 0;
      // A fresh Node of our own: an earlier e2e may have left it tainted.
      await real.admin("DELETE", `/api/v1/nodes/${real.nodeName}`);
      agent = await runKubelet({
        kubeconfig: real.nodeKubeconfig,
        nodeName: real.nodeName,
        containerRuntimeEndpoint: criEndpoint(),
        rootDir: join(dir, "root"),
        port: -1,
        securePort: kubeletPort,
        address: nodeIP,
        nodeIP,
        clientCAFile: join(pki, "ca.crt"),
        authorizationMode: "Webhook",
        authenticationTokenWebhook: true,
        clusterDNS: ["10.96.0.10"],
        clusterDomain: "cluster.local",
        // scripts/kubelet.sh's evictionHard, so both nodes reserve the same from allocatable.
        evictionHard: {
          "memory.available": "1Mi",
          "nodefs.available": "1%",
          "nodefs.inodesFree": "1%",
          "imagefs.available": "1%",
          "imagefs.inodesFree": "1%",
        },
        stopPodsOnExit: true,
      });
      await waitFor("the probelet Node Ready and untainted", async () => {
        const node = (await real.admin("GET", `/api/v1/nodes/${real.nodeName}`)).body;
        return condition(node, "Ready") === "True" &&
          !(node?.spec?.taints ?? []).some((t: Json) => t.effect === "NoExecute");
      }, { timeoutMs: 120_000 });
      const controllers = await real.controllersRunning();
      const chosen = scenarios.filter((s) =>
        (controllers || !s.needsControllers) && (only === undefined || only.has(s.name))
      );
      for (const s of scenarios) {
        if (!chosen.includes(s)) {
          console.log(
            `differential: ${s.name} skipped: ${
              only?.has(s.name) === false
                ? "not in PROBELET_DIFFERENTIAL_SCENARIOS"
                : "no controllers"
            }`,
          );
        }
      }
      const started = Date.now();
      const results = await Promise.all(chosen.map(async (scenario) => {
        const ns = (side: string) => `diff-${stamp}-${side}-${scenario.name}`.slice(0, 63);
        namespaces.push(ns("k"), ns("p"));
        const [kubelet, probelet] = await Promise.all([
          runOnNode(real, admin, scenario, ns("k"), kubeletNode),
          runOnNode(real, admin, scenario, ns("p"), real.nodeName),
        ]);
        return { scenario, kubelet, probelet };
      }));
      console.log(`differential: ${chosen.length} scenarios in ${Date.now() - started} ms`);
      const used = new Set<unknown>();
      await t.step("node", async () => {
        const [kubelet, probelet] = await Promise.all(
          [kubeletNode, real.nodeName].map(async (name) =>
            (await real.admin("GET", `/api/v1/nodes/${name}`)).body
          ),
        );
        const diffs = compareViews(
          nodeView(kubelet, { namespace: "", nodeName: kubeletNode }),
          nodeView(probelet, { namespace: "", nodeName: real.nodeName }),
          "node",
          differentialAllowList,
        );
        report("node", diffs, used);
      });
      for (const { scenario, kubelet, probelet } of results) {
        await t.step(scenario.name, () => {
          if (kubelet.error) {
            throw new Error(`kubelet did not finish: ${kubelet.error}`);
          }
          if (probelet.error) {
            throw new Error(`probelet did not finish: ${probelet.error}`);
          }
          if (scenario.probeletRefuses) {
            checkRefusal(scenario, kubelet, probelet);
            return;
          }
          const diffs: Difference[] = compareViews(
            podView(kubelet.pod, kubelet.events, kubelet.names, kubelet.history),
            podView(probelet.pod, probelet.events, probelet.names, probelet.history),
            scenario.name,
            differentialAllowList,
          );
          report(scenario.name, diffs, used);
        });
      }
      for (const entry of differentialAllowList) {
        if (only === undefined && !used.has(entry)) {
          console.log(
            `differential: allow-list entry matched nothing: ${entry.path} (${entry.reason})`,
          );
        }
      }
    } finally {
      for (const ns of namespaces) {
        await real.admin("DELETE", `/api/v1/namespaces/${ns}`).catch(() => {});
      }
      await agent?.stop();
      admin.client.close();
      if (quiet) log.setLogSink(quiet);
      await real.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
