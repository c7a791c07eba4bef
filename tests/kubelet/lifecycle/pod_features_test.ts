/**
 * Tests for the pod feature admission (src/kubelet/lifecycle/pod_features.ts): one step per class
 * of field, the tables against the API types, every row against what admission does, the generated
 * table (docs/reference/pod_fields.md) against the tables, and the repository's fixture pods
 * admitted on their runtime.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import type { Container, Pod, PodSpec } from "../../../src/api/core/v1/mod.ts";
import { loadPodManifests } from "../../../src/kubelet/config/mod.ts";
import {
  type FieldRule,
  type NodeFacts,
  PodFeaturesAdmitHandler,
  PodFeatureUnsupported,
  podFieldTables,
  PodOSNotSupported,
  type RuntimeKind,
  unsupportedPodFields,
} from "../../../src/kubelet/lifecycle/pod_features.ts";
import { podSpecTable, tableFile, tableMarkers } from "../../../scripts/pod_spec_table.ts";

const containerd: NodeFacts = { runtime: "containerd", apiServer: true, uid: 1000, gid: 1000 };
const embedded: NodeFacts = { runtime: "embedded", apiServer: true, uid: 1000, gid: 1000 };

function getTestPod(spec: Partial<PodSpec> = {}, container: Partial<Container> = {}): Pod {
  return {
    metadata: { name: "web", namespace: "default", uid: "uid-web" },
    spec: { containers: [{ name: "app", image: "busybox:1", ...container }], ...spec },
  };
}

// The pod as the API server stores it: every default it fills in, nothing asked beyond them.
function apiDefaultedPod(): Pod {
  return getTestPod({
    restartPolicy: "Always",
    terminationGracePeriodSeconds: 30,
    dnsPolicy: "ClusterFirst",
    securityContext: {},
    schedulerName: "default-scheduler",
    enableServiceLinks: false,
    automountServiceAccountToken: false,
    serviceAccountName: "default",
    serviceAccount: "default",
    priority: 0,
    preemptionPolicy: "PreemptLowerPriority",
    nodeName: "node",
    tolerations: [
      { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute" },
      { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute" },
    ],
  }, {
    command: ["sleep", "600"],
    terminationMessagePath: "/dev/termination-log",
    terminationMessagePolicy: "File",
    imagePullPolicy: "IfNotPresent",
    resources: {},
    ports: [{ containerPort: 80, protocol: "TCP" }],
    readinessProbe: {
      httpGet: { path: "/", port: 80, scheme: "HTTP" },
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    },
  });
}

function paths(pod: Pod, facts: NodeFacts): string[] {
  return unsupportedPodFields(pod, facts).map((f) => f.path);
}

// The projected volume the API server injects into every pod with a service account.
const kubeAPIAccess = {
  defaultMode: 420,
  sources: [
    { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
    { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
    {
      downwardAPI: {
        items: [{
          path: "namespace",
          fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" },
        }],
      },
    },
  ],
};

Deno.test("TestPodFeaturesAdmitHandler", async (t) => {
  const admit = (pod: Pod, facts: NodeFacts) =>
    new PodFeaturesAdmitHandler({ facts, os: "linux" }).admit({ pod, otherPods: [] });

  await t.step("an API-defaulted ordinary pod is admitted on both runtimes", () => {
    assertEquals(admit(apiDefaultedPod(), containerd), { admit: true });
    assertEquals(admit(apiDefaultedPod(), embedded), { admit: true });
    // Zero values a manifest may spell out ask for nothing either.
    const zeros = getTestPod({ hostname: "", volumes: [], hostPID: false }, { lifecycle: {} });
    assertEquals(admit(zeros, containerd), { admit: true });
  });

  await t.step("stdin, stdinOnce, tty: run on containerd, refused on embedded", () => {
    const pod = getTestPod({}, { stdin: true, stdinOnce: true, tty: true });
    assertEquals(admit(pod, containerd), { admit: true });
    assertEquals(paths(pod, embedded), [
      "spec.containers[0].stdin",
      "spec.containers[0].stdinOnce",
      "spec.containers[0].tty",
    ]);
    assertEquals(admit(getTestPod({}, { stdin: false, tty: false }), embedded), { admit: true });
  });

  await t.step("activeDeadlineSeconds: enforced on both runtimes", () => {
    const pod = getTestPod({ activeDeadlineSeconds: 3 });
    assertEquals(admit(pod, containerd), { admit: true });
    assertEquals(admit(pod, embedded), { admit: true });
  });

  await t.step(
    "volumes: the injected token volume runs on containerd, is refused on embedded",
    () => {
      const pod = getTestPod({
        volumes: [{ name: "kube-api-access-x", projected: kubeAPIAccess }],
      }, {
        volumeMounts: [{
          name: "kube-api-access-x",
          mountPath: "/var/run/secrets",
          readOnly: true,
        }],
      });
      assertEquals(admit(pod, containerd), { admit: true });
      assertEquals(admit(pod, embedded), {
        admit: false,
        reason: PodFeatureUnsupported,
        message: "spec.containers[0].volumeMounts is not supported by this node; " +
          "spec.volumes[0].projected is not supported by this node",
      });
      const pvc = getTestPod({
        volumes: [{ name: "a", emptyDir: {} }, {
          name: "b",
          persistentVolumeClaim: { claimName: "c" },
        }],
      });
      assertEquals(paths(pvc, embedded), [
        "spec.volumes[0].emptyDir",
        "spec.volumes[1].persistentVolumeClaim",
      ]);
      // Other volume types are refused with the field named; the plugins' own refusals too.
      assertEquals(paths(pvc, containerd), ["spec.volumes[1].persistentVolumeClaim"]);
      const refusedHere = getTestPod({
        volumes: [
          { name: "a", emptyDir: { sizeLimit: "1Gi" } },
          { name: "b", emptyDir: { medium: "Memory", sizeLimit: "64Mi" } },
          {
            name: "c",
            projected: { sources: [{ clusterTrustBundle: { name: "x", path: "ca" } }] },
          },
          { name: "d", csi: { driver: "x" } },
        ],
      }, { volumeMounts: [{ name: "a", mountPath: "/a", recursiveReadOnly: "Enabled" }] });
      assertEquals(paths(refusedHere, containerd), [
        "spec.containers[0].volumeMounts[0].recursiveReadOnly",
        "spec.volumes[0].emptyDir.sizeLimit",
        "spec.volumes[2].projected.sources[0].clusterTrustBundle",
        "spec.volumes[3].csi",
      ]);
      // A value that is not the object the API defines is refused, not skipped.
      assertEquals(paths(getTestPod({ securityContext: "root" } as Partial<PodSpec>), embedded), [
        "spec.securityContext",
      ]);
    },
  );

  await t.step("security context: honoured on containerd; the agent's own ids on embedded", () => {
    const pod = getTestPod({ securityContext: { runAsUser: 1000, runAsNonRoot: true } }, {
      securityContext: {
        capabilities: { drop: ["ALL"] },
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
      },
    });
    assertEquals(paths(pod, containerd), []);
    assertEquals(paths(pod, embedded), [
      "spec.containers[0].securityContext.capabilities.drop",
      "spec.containers[0].securityContext.allowPrivilegeEscalation",
      "spec.containers[0].securityContext.readOnlyRootFilesystem",
    ]);
    const own = getTestPod({ securityContext: { runAsUser: 1000, runAsGroup: 1000 } });
    assertEquals(paths(own, embedded), []);
    assertEquals(paths(own, containerd), []);
    const other = getTestPod({ securityContext: { runAsUser: 0 } });
    assertEquals(paths(other, embedded), ["spec.securityContext.runAsUser"]);
    const seccomp = (type: string) =>
      getTestPod({}, { securityContext: { seccompProfile: { type } } });
    assertEquals(paths(seccomp("Unconfined"), containerd), []);
    assertEquals(paths(seccomp("RuntimeDefault"), containerd), []);
    assertEquals(paths(seccomp("RuntimeDefault"), embedded), [
      "spec.containers[0].securityContext.seccompProfile.type",
    ]);
    // No AppArmor on this host; Unmasked /proc needs a user namespace.
    const refusedHere = getTestPod({}, {
      securityContext: { appArmorProfile: { type: "RuntimeDefault" }, procMount: "Unmasked" },
    });
    assertEquals(paths(refusedHere, containerd), [
      "spec.containers[0].securityContext.appArmorProfile.type",
      "spec.containers[0].securityContext.procMount",
    ]);
    // Values that ask for nothing: admitted.
    const defaults = getTestPod({ hostPID: false }, {
      securityContext: { privileged: false, allowPrivilegeEscalation: true, procMount: "Default" },
    });
    assertEquals(paths(defaults, containerd), []);
  });

  await t.step("env: valueFrom and envFrom run on both runtimes; fileKeyRef is refused", () => {
    const pod = getTestPod({}, {
      env: [
        { name: "A", value: "1" },
        { name: "B", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
        { name: "C", valueFrom: { resourceFieldRef: { resource: "limits.cpu" } } },
        { name: "D", valueFrom: { configMapKeyRef: { name: "cm", key: "k" } } },
        { name: "E", valueFrom: { secretKeyRef: { name: "s", key: "k" } } },
        { name: "F", valueFrom: { fileKeyRef: { volumeName: "v", path: "p", key: "k" } } },
      ],
      envFrom: [{ prefix: "P_", configMapRef: { name: "cm" } }, { secretRef: { name: "s" } }],
    });
    const want = ["spec.containers[0].env[5].valueFrom.fileKeyRef"];
    assertEquals(paths(pod, containerd), want);
    assertEquals(paths(pod, embedded), want);
  });

  await t.step("env: values with $(VAR) and $$ run: kubelet's expansion is done", () => {
    const pod = getTestPod({}, {
      env: [{ name: "A", value: "x" }, { name: "B", value: "$(A)/y" }, { name: "C", value: "$$" }],
      command: ["sh", "-c", "echo $(A)"],
    });
    assertEquals(paths(pod, embedded), []);
    assertEquals(paths(pod, containerd), []);
  });

  await t.step("resources: honoured on containerd, refused on embedded", () => {
    const pod = getTestPod({}, {
      resources: { requests: { cpu: "100m" }, limits: { memory: "64Mi" } },
    });
    const want = ["spec.containers[0].resources.requests", "spec.containers[0].resources.limits"];
    assertEquals(paths(pod, containerd), []);
    assertEquals(paths(pod, embedded), want);
    // No pod cgroup enforces an overhead, nor pod-level resources.
    const overhead = getTestPod({ overhead: { cpu: "10m" }, resources: { limits: { cpu: "1" } } });
    assertEquals(paths(overhead, containerd), ["spec.overhead", "spec.resources"]);
  });

  await t.step(
    "hooks and termination messages: run; a stop signal and, on embedded, a message path refused",
    () => {
      const pod = getTestPod({}, {
        lifecycle: {
          postStart: { exec: { command: ["true"] } },
          preStop: { sleep: { seconds: 4 } },
          stopSignal: "SIGUSR1",
        },
        terminationMessagePath: "/tmp/msg",
        terminationMessagePolicy: "FallbackToLogsOnError",
      });
      assertEquals(paths(pod, containerd), ["spec.containers[0].lifecycle.stopSignal"]);
      assertEquals(paths(pod, embedded), [
        "spec.containers[0].lifecycle.stopSignal",
        "spec.containers[0].terminationMessagePath",
      ]);
    },
  );

  await t.step("hosts and DNS: honoured on containerd, refused for host processes", () => {
    const pod = getTestPod({
      hostname: "h",
      subdomain: "s",
      setHostnameAsFQDN: true,
      hostAliases: [{ ip: "10.1.2.3", hostnames: ["a"] }],
      dnsPolicy: "None",
      dnsConfig: { nameservers: ["10.0.0.53"], options: [{ name: "ndots", value: "2" }] },
    }, {});
    assertEquals(paths(pod, containerd), []);
    assertEquals(paths(pod, embedded), [
      "spec.hostname",
      "spec.subdomain",
      "spec.setHostnameAsFQDN",
      "spec.hostAliases",
      "spec.dnsPolicy",
      "spec.dnsConfig",
    ]);
  });

  await t.step(
    "images: every pull policy and pull secrets admitted on containerd and embedded",
    () => {
      for (const imagePullPolicy of ["Always", "IfNotPresent", "Never"]) {
        const pod = getTestPod({ imagePullSecrets: [{ name: "regcred" }] }, { imagePullPolicy });
        assertEquals(paths(pod, containerd), []);
        assertEquals(paths(pod, embedded), []);
      }
    },
  );

  await t.step("namespaces: honoured on containerd, the embedded runtime's own", () => {
    const pod = getTestPod({
      hostNetwork: true,
      hostPID: true,
      hostIPC: true,
      shareProcessNamespace: true,
    });
    assertEquals(paths(pod, containerd), []);
    assertEquals(paths(pod, embedded), []);
  });

  await t.step("ports: embedded admits a hostPort only where the process listens itself", () => {
    const same = getTestPod({}, { ports: [{ containerPort: 8080, hostPort: 8080 }] });
    const mapped = getTestPod({}, { ports: [{ containerPort: 80, hostPort: 8080 }] });
    assertEquals(paths(same, embedded), []);
    assertEquals(paths(mapped, embedded), ["spec.containers[0].ports[0].hostPort"]);
    assertEquals(paths(mapped, containerd), []);
  });

  await t.step("container restartPolicy: a sidecar init container only", () => {
    const sidecar = getTestPod({
      initContainers: [{ name: "side", image: "busybox:1", restartPolicy: "Always" }],
    });
    assertEquals(paths(sidecar, containerd), []);
    const regular = getTestPod({}, { restartPolicy: "Always" });
    assertEquals(paths(regular, containerd), ["spec.containers[0].restartPolicy"]);
  });

  await t.step("service links: admitted with or without an API server", () => {
    const pod = getTestPod({ enableServiceLinks: true });
    assertEquals(paths(pod, containerd), []);
    assertEquals(paths(pod, embedded), []);
    assertEquals(paths(pod, { ...containerd, apiServer: false }), []);
  });

  await t.step("scheduler-only fields are ignored, as kubelet ignores them", () => {
    const pod = getTestPod({
      schedulerName: "other",
      priorityClassName: "high",
      priority: 1000,
      topologySpreadConstraints: [{ maxSkew: 1 }],
      schedulingGates: [{ name: "g" }],
      affinity: {
        podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [] },
        nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1 }] },
      },
    });
    assertEquals(paths(pod, containerd), []);
  });

  await t.step("fields the node does not know are refused, at any depth", () => {
    const pod = getTestPod({ futureField: { on: true } } as Partial<PodSpec>, {
      futureContainerField: "x",
      livenessProbe: { exec: { command: ["true"] }, futureProbeField: 1 },
    } as Partial<Container>);
    const result = admit(pod, containerd);
    assertEquals(result.reason, PodFeatureUnsupported);
    assertEquals(
      result.message,
      [
        "spec.containers[0].futureContainerField",
        "spec.containers[0].livenessProbe.futureProbeField",
        "spec.futureField",
      ].map((p) => `${p} is not supported by this node (a field this node does not know)`)
        .join("; "),
    );
  });

  await t.step("another OS: PodOSNotSupported, as kubelet", () => {
    assertEquals(admit(getTestPod({ os: { name: "windows" } }), containerd), {
      admit: false,
      reason: PodOSNotSupported,
      message: "Failed to admit pod as the OS field doesn't match node OS",
    });
    assertEquals(admit(getTestPod({ os: { name: "linux" } }), containerd), { admit: true });
  });
});

// The interface bodies of src/api/core/v1/types.ts: field names by type (`extends` included).
async function apiTypeFields(): Promise<Map<string, string[]>> {
  const source = await Deno.readTextFile(
    new URL("../../../src/api/core/v1/types.ts", import.meta.url),
  );
  const out = new Map<string, string[]>();
  const extendsOf = new Map<string, string>();
  for (
    const m of source.matchAll(/export interface (\w+)(?: extends (\w+))? \{\n([\s\S]*?)\n\}/g)
  ) {
    const fields = [...m[3].matchAll(/^ {2}(\w+)\??:/gm)].map((f) => f[1]);
    out.set(m[1], fields);
    if (m[2]) extendsOf.set(m[1], m[2]);
  }
  for (const [type, parent] of extendsOf) {
    out.set(type, [...(out.get(parent) ?? []), ...out.get(type)!]);
  }
  return out;
}

Deno.test("TestFieldTablesCoverTheAPITypes", async () => {
  // The compiler already demands a row per field (FieldTable<T>); this also catches a table
  // registered under the wrong type's name.
  const types = await apiTypeFields();
  for (const [type, table] of Object.entries(podFieldTables)) {
    const fields = types.get(type);
    assert(fields, `${type} is not an interface of types.ts`);
    assertEquals(Object.keys(table).sort(), [...fields].sort(), type);
  }
  // Every nested type a table points to is itself a table.
  const tables = new Set(Object.values(podFieldTables));
  for (const [type, table] of Object.entries(podFieldTables)) {
    for (const [field, rule] of Object.entries(table)) {
      if (rule.fields) assert(tables.has(rule.fields), `${type}.${field}'s table is registered`);
    }
  }
});

// Where a field of each table sits in a pod, and the object that holds it.
const holders: Record<string, (value: unknown) => { pod: Pod; path: string }> = {
  PodSpec: (v) => ({ pod: podWith({ spec: { x: v } }), path: "spec.x" }),
  Container: (v) => ({ pod: podWith({ container: { x: v } }), path: "spec.containers[0].x" }),
  ContainerPort: (v) => ({
    pod: podWith({ container: { ports: [{ x: v }] } }),
    path: "spec.containers[0].ports[0].x",
  }),
  EnvVar: (v) => ({
    pod: podWith({ container: { env: [{ name: "A", x: v }] } }),
    path: "spec.containers[0].env[0].x",
  }),
  EnvVarSource: (v) => ({
    pod: podWith({ container: { env: [{ name: "A", valueFrom: { x: v } }] } }),
    path: "spec.containers[0].env[0].valueFrom.x",
  }),
  EnvFromSource: (v) => ({
    pod: podWith({ container: { envFrom: [{ x: v }] } }),
    path: "spec.containers[0].envFrom[0].x",
  }),
  ResourceRequirements: (v) => ({
    pod: podWith({ container: { resources: { x: v } } }),
    path: "spec.containers[0].resources.x",
  }),
  Probe: (v) => ({
    pod: podWith({ container: { livenessProbe: { x: v } } }),
    path: "spec.containers[0].livenessProbe.x",
  }),
  ExecAction: (v) => ({
    pod: podWith({ container: { livenessProbe: { exec: { x: v } } } }),
    path: "spec.containers[0].livenessProbe.exec.x",
  }),
  HTTPGetAction: (v) => ({
    pod: podWith({ container: { livenessProbe: { httpGet: { x: v } } } }),
    path: "spec.containers[0].livenessProbe.httpGet.x",
  }),
  HTTPHeader: (v) => ({
    pod: podWith({ container: { livenessProbe: { httpGet: { httpHeaders: [{ x: v }] } } } }),
    path: "spec.containers[0].livenessProbe.httpGet.httpHeaders[0].x",
  }),
  TCPSocketAction: (v) => ({
    pod: podWith({ container: { livenessProbe: { tcpSocket: { x: v } } } }),
    path: "spec.containers[0].livenessProbe.tcpSocket.x",
  }),
  GRPCAction: (v) => ({
    pod: podWith({ container: { livenessProbe: { grpc: { x: v } } } }),
    path: "spec.containers[0].livenessProbe.grpc.x",
  }),
  PodSecurityContext: (v) => ({
    pod: podWith({ spec: { securityContext: { x: v } } }),
    path: "spec.securityContext.x",
  }),
  SecurityContext: (v) => ({
    pod: podWith({ container: { securityContext: { x: v } } }),
    path: "spec.containers[0].securityContext.x",
  }),
  Capabilities: (v) => ({
    pod: podWith({ container: { securityContext: { capabilities: { x: v } } } }),
    path: "spec.containers[0].securityContext.capabilities.x",
  }),
  SeccompProfile: (v) => ({
    pod: podWith({ container: { securityContext: { seccompProfile: { x: v } } } }),
    path: "spec.containers[0].securityContext.seccompProfile.x",
  }),
  AppArmorProfile: (v) => ({
    pod: podWith({ container: { securityContext: { appArmorProfile: { x: v } } } }),
    path: "spec.containers[0].securityContext.appArmorProfile.x",
  }),
  Affinity: (v) => ({ pod: podWith({ spec: { affinity: { x: v } } }), path: "spec.affinity.x" }),
  NodeAffinity: (v) => ({
    pod: podWith({ spec: { affinity: { nodeAffinity: { x: v } } } }),
    path: "spec.affinity.nodeAffinity.x",
  }),
  PodOS: (v) => ({ pod: podWith({ spec: { os: { x: v } } }), path: "spec.os.x" }),
  Volume: (v) => ({ pod: podWith({ spec: { volumes: [{ x: v }] } }), path: "spec.volumes[0].x" }),
  EmptyDirVolumeSource: (v) => ({
    pod: podWith({ spec: { volumes: [{ name: "v", emptyDir: { x: v } }] } }),
    path: "spec.volumes[0].emptyDir.x",
  }),
  ProjectedVolumeSource: (v) => ({
    pod: podWith({ spec: { volumes: [{ name: "v", projected: { x: v } }] } }),
    path: "spec.volumes[0].projected.x",
  }),
  VolumeProjection: (v) => ({
    pod: podWith({ spec: { volumes: [{ name: "v", projected: { sources: [{ x: v }] } }] } }),
    path: "spec.volumes[0].projected.sources[0].x",
  }),
  VolumeMount: (v) => ({
    pod: podWith({ container: { volumeMounts: [{ x: v }] } }),
    path: "spec.containers[0].volumeMounts[0].x",
  }),
  Lifecycle: (v) => ({
    pod: podWith({ container: { lifecycle: { x: v } } }),
    path: "spec.containers[0].lifecycle.x",
  }),
  LifecycleHandler: (v) => ({
    pod: podWith({ container: { lifecycle: { preStop: { x: v } } } }),
    path: "spec.containers[0].lifecycle.preStop.x",
  }),
  SleepAction: (v) => ({
    pod: podWith({ container: { lifecycle: { preStop: { sleep: { x: v } } } } }),
    path: "spec.containers[0].lifecycle.preStop.sleep.x",
  }),
};

function podWith(
  parts: { spec?: Record<string, unknown>; container?: Record<string, unknown> },
): Pod {
  return {
    metadata: { name: "p" },
    spec: { containers: [{ name: "app", ...parts.container }], ...parts.spec } as PodSpec,
  };
}

// Puts `field` where the placeholder key `x` is.
function rename(value: unknown, field: string): unknown {
  if (Array.isArray(value)) return value.map((v) => rename(v, field));
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k === "x" ? field : k, rename(v, field)]),
  );
}

// Values that ask for something, for any field type.
const candidates: unknown[] = ["probelet-sample", 4242, true, false, ["probelet-sample"], {
  sample: "probelet-sample",
}];

Deno.test("TestEveryRowIsWhatAdmissionDoes", async (t) => {
  for (const runtime of ["containerd", "embedded"] as RuntimeKind[]) {
    const facts = runtime === "containerd" ? containerd : embedded;
    await t.step(runtime, () => {
      let checked = 0;
      for (const [type, table] of Object.entries(podFieldTables)) {
        for (const [field, rule] of Object.entries(table) as [string, FieldRule][]) {
          if (rule.fields) continue; // its own table's rows are checked
          const verdict = rule[runtime];
          const row = `${type}.${field} (${runtime})`;
          for (const value of candidates) {
            const { pod, path } = holders[type](value);
            const placed = rename(pod, field) as Pod;
            const fieldPath = path.replace(/\.x$/, `.${field}`);
            // The field, a part of it, or the value holding it (volumes on embedded) refused.
            const refusedHere = unsupportedPodFields(placed, facts).some((f) =>
              f.path === fieldPath || f.path.startsWith(`${fieldPath}.`) ||
              f.path.startsWith(`${fieldPath}[`) || fieldPath.startsWith(`${f.path}.`) ||
              fieldPath.startsWith(`${f.path}[`)
            );
            const allowed = verdict.allows?.test(value, {
              facts,
              path: fieldPath,
              parent: {},
            }) ?? false;
            const want = verdict.support === "refused" && !allowed;
            assertEquals(refusedHere, want, `${row} = ${JSON.stringify(value)}`);
          }
          checked++;
        }
      }
      assert(checked > 100, `only ${checked} rows`);
    });
  }
});

// The table lives in docs/reference/pod_fields.md (the README links to it); the test keeps its
// historical name.
Deno.test("TestReadmeTableIsGenerated", async () => {
  const doc = await Deno.readTextFile(tableFile);
  const begin = doc.indexOf(tableMarkers.begin);
  const end = doc.indexOf(tableMarkers.end);
  assert(begin >= 0 && end > begin, "docs/reference/pod_fields.md has the table's markers");
  assert(
    doc.slice(begin, end).includes(`\n${podSpecTable()}\n`),
    "docs/reference/pod_fields.md's table is out of date: " +
      "deno run -A scripts/pod_spec_table.ts --write",
  );
  // One row per field of every table.
  const rows = Object.values(podFieldTables).reduce((n, t) => n + Object.keys(t).length, 0);
  assertEquals(podSpecTable().split("\n").length, rows + 2);
});

Deno.test("TestFixturePodsAreAdmitted", async () => {
  for (
    const [dir, facts] of [["containerd", containerd], ["host", embedded]] as const
  ) {
    const url = new URL(`../../../fixtures/pods/${dir}`, import.meta.url);
    const { pods, errors } = await loadPodManifests(url.pathname, { nodeName: "node" });
    assertEquals(errors, []);
    assert(pods.length > 0, dir);
    for (const pod of pods) {
      assertEquals(paths(pod, { ...facts, apiServer: false }), [], pod.metadata.name ?? "");
    }
  }
});

Deno.test("TestManifestFieldsReachAdmission", async () => {
  // Static pods take the file source's decoding, validation and defaults: none of it may drop a
  // field admission has to see.
  const dir = await Deno.makeTempDir({ prefix: "probelet-pod-features-" });
  try {
    await Deno.writeTextFile(
      join(dir, "web.yaml"),
      `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  futureField: 1
  volumes:
  - name: v
    hostPath: {path: /}
  containers:
  - name: app
    image: busybox:1
    command: [sh]
    volumeMounts: [{name: v, mountPath: /x}]
`,
    );
    const { pods, errors } = await loadPodManifests(dir, { nodeName: "node" });
    assertEquals(errors, []);
    assertEquals(unsupportedPodFields(pods[0], { ...containerd, apiServer: false }), [
      { path: "spec.futureField", known: false },
    ]);
    assertEquals(unsupportedPodFields(pods[0], { ...embedded, apiServer: false }), [
      { path: "spec.futureField", known: false },
      { path: "spec.volumes[0].hostPath", known: true },
      { path: "spec.containers[0].volumeMounts", known: true },
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
