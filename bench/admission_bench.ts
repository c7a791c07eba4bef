/**
 * The cost of the pod-features admission per pod, for
 * `deno bench --allow-all bench/admission_bench.ts`: an API-defaulted pod with probes (admitted),
 * the same pod with the service-account token volume (refused), and a JSON round trip of that pod
 * beside them as the floor (the status manager and the pod config copy each pod at least once).
 * @module
 */
import type { Pod } from "../src/api/core/v1/mod.ts";
import { PodFeaturesAdmitHandler } from "../src/kubelet/lifecycle/pod_features.ts";

const probe = {
  httpGet: { path: "/healthz", port: 8080, scheme: "HTTP" },
  timeoutSeconds: 1,
  periodSeconds: 10,
  successThreshold: 1,
  failureThreshold: 3,
};

function container(name: string) {
  return {
    name,
    image: "registry.local/app:1",
    command: ["/app", "--port=8080"],
    env: [{ name: "MODE", value: "prod" }, { name: "LOG", value: "info" }],
    ports: [{ name: "http", containerPort: 8080, protocol: "TCP" as const }],
    livenessProbe: probe,
    readinessProbe: probe,
    terminationMessagePath: "/dev/termination-log",
    terminationMessagePolicy: "File",
    imagePullPolicy: "IfNotPresent",
    resources: {},
  };
}

const admitted: Pod = {
  metadata: { name: "web", namespace: "default", uid: "u" },
  spec: {
    containers: [container("app"), container("sidecar")],
    restartPolicy: "Always",
    terminationGracePeriodSeconds: 30,
    dnsPolicy: "ClusterFirst",
    securityContext: {},
    schedulerName: "default-scheduler",
    enableServiceLinks: false,
    automountServiceAccountToken: false,
    serviceAccountName: "default",
    priority: 0,
    preemptionPolicy: "PreemptLowerPriority",
    nodeName: "node",
    tolerations: [
      { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute" },
      { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute" },
    ],
  },
};
const refused: Pod = structuredClone(admitted);
refused.spec.volumes = [{ name: "kube-api-access-x", projected: { sources: [] } }];

const handler = new PodFeaturesAdmitHandler({
  facts: { runtime: "containerd", apiServer: true, uid: 0, gid: 0 },
});

Deno.bench("admit: API-defaulted pod, 2 containers with probes", { group: "pod" }, () => {
  if (!handler.admit({ pod: admitted, otherPods: [] }).admit) throw new Error("refused");
});
Deno.bench("admit: the same pod with the token volume (refused)", { group: "pod" }, () => {
  if (handler.admit({ pod: refused, otherPods: [] }).admit) throw new Error("admitted");
});
Deno.bench("floor: JSON round trip of the pod", { group: "pod", baseline: true }, () => {
  JSON.parse(JSON.stringify(admitted));
});
