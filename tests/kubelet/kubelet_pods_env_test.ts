/**
 * Tests of the container environment, ported from kubelet's pkg/kubelet/kubelet_pods_test.go
 * (TestMakeEnvironmentVariables, the cases that apply: no EnvFiles, no relaxed-validation gate)
 * and pkg/kubelet/envvars/envvars_test.go (TestFromServices); plus resourceFieldRef with the
 * node's allocatable (kubelet_resources_test.go's TestPodResourceLimitsDefaulting) and the
 * container config the runtime gets (command and args expanded against the environment).
 * @module
 */
import { deepStrictEqual as assertEquals, rejects } from "node:assert/strict";
import type {
  ConfigMap,
  Container,
  EnvVar,
  Pod,
  Secret,
  Service,
} from "../../src/api/core/v1/mod.ts";
import { newNotFound } from "../../src/client/errors.ts";
import {
  type EnvironmentSources,
  makeEnvironmentVariables,
  type ServiceLister,
} from "../../src/kubelet/kubelet_pods.ts";
import { fromServices } from "../../src/kubelet/envvars/envvars.ts";
import { generateContainerConfig } from "../../src/kubelet/kuberuntime/kuberuntime_container.ts";
import { defaultLinuxConfigOptions } from "../../src/kubelet/kuberuntime/kuberuntime_container_linux.ts";
import { encodeBase64 } from "../../src/util/base64.ts";

const testKubeletHostIP = "127.0.0.1";
const testKubeletHostIPv6 = "::1";

function buildService(
  name: string,
  namespace: string,
  clusterIP: string,
  protocol: string,
  port: number,
): Service {
  return { metadata: { name, namespace }, spec: { ports: [{ protocol, port }], clusterIP } };
}

const services: Service[] = [
  buildService("kubernetes", "default", "1.2.3.1", "TCP", 8081),
  buildService("test", "test1", "1.2.3.3", "TCP", 8083),
  buildService("kubernetes", "test2", "1.2.3.4", "TCP", 8084),
  buildService("test", "test2", "1.2.3.5", "TCP", 8085),
  buildService("test", "test2", "None", "TCP", 8085),
  buildService("test", "test2", "", "TCP", 8085),
  buildService("not-special", "default", "1.2.3.8", "TCP", 8088),
  buildService("not-special", "default", "None", "TCP", 8088),
  buildService("not-special", "default", "", "TCP", 8088),
];

// The seven variables of one service with one unnamed TCP port.
function serviceVars(prefix: string, ip: string, port: number): EnvVar[] {
  const url = `tcp://${ip}:${port}`;
  return [
    { name: `${prefix}_SERVICE_HOST`, value: ip },
    { name: `${prefix}_SERVICE_PORT`, value: String(port) },
    { name: `${prefix}_PORT`, value: url },
    { name: `${prefix}_PORT_${port}_TCP`, value: url },
    { name: `${prefix}_PORT_${port}_TCP_PROTO`, value: "tcp" },
    { name: `${prefix}_PORT_${port}_TCP_PORT`, value: String(port) },
    { name: `${prefix}_PORT_${port}_TCP_ADDR`, value: ip },
  ];
}
const masterVars = serviceVars("KUBERNETES", "1.2.3.1", 8081);

interface TestCase {
  name: string;
  ns: string;
  enableServiceLinks?: boolean;
  container: Partial<Container>;
  nilLister?: boolean;
  staticPod?: boolean;
  unsyncedServices?: boolean;
  /** No API server: kubelet's nil kubeClient (no managers). */
  noKubeClient?: boolean;
  configMap?: ConfigMap;
  secret?: Secret;
  podIPs?: string[];
  expectedEnvs?: EnvVar[];
  /** The error's message, when the case fails. */
  expectedError?: string;
}

function testConfigMap(data: Record<string, string>): ConfigMap {
  return { metadata: { namespace: "test1", name: "test-configmap" }, data };
}
function testSecret(data: Record<string, string>): Secret {
  const encoded: Record<string, string> = {};
  for (const [k, v] of Object.entries(data)) encoded[k] = encodeBase64(new TextEncoder().encode(v));
  return { metadata: { namespace: "test1", name: "test-secret" }, data: encoded };
}
const fieldRef = (name: string, fieldPath: string): EnvVar => ({
  name,
  valueFrom: { fieldRef: { apiVersion: "v1", fieldPath } },
});

const cases: TestCase[] = [
  {
    name: "if services aren't synced, non-static pods should fail",
    ns: "test1",
    enableServiceLinks: false,
    container: { env: [] },
    unsyncedServices: true,
    expectedError: "services have not yet been read at least once, cannot construct envvars",
  },
  {
    name: "if services aren't synced, static pods should succeed",
    ns: "test1",
    enableServiceLinks: false,
    container: { env: [] },
    staticPod: true,
    unsyncedServices: true,
    expectedEnvs: masterVars,
  },
  {
    name: "api server = Y, kubelet = Y",
    ns: "test1",
    enableServiceLinks: false,
    container: { env: [{ name: "FOO", value: "BAR" }, ...serviceVars("TEST", "1.2.3.3", 8083)] },
    expectedEnvs: [
      { name: "FOO", value: "BAR" },
      ...serviceVars("TEST", "1.2.3.3", 8083),
      ...masterVars,
    ],
  },
  {
    name: "api server = Y, kubelet = N",
    ns: "test1",
    enableServiceLinks: false,
    container: { env: [{ name: "FOO", value: "BAR" }, ...serviceVars("TEST", "1.2.3.3", 8083)] },
    nilLister: true,
    expectedEnvs: [{ name: "FOO", value: "BAR" }, ...serviceVars("TEST", "1.2.3.3", 8083)],
  },
  {
    name: "api server = N; kubelet = Y",
    ns: "test1",
    enableServiceLinks: false,
    container: { env: [{ name: "FOO", value: "BAZ" }] },
    expectedEnvs: [{ name: "FOO", value: "BAZ" }, ...masterVars],
  },
  {
    name: "api server = N; kubelet = Y; service env vars",
    ns: "test1",
    enableServiceLinks: true,
    container: { env: [{ name: "FOO", value: "BAZ" }] },
    expectedEnvs: [
      { name: "FOO", value: "BAZ" },
      ...serviceVars("TEST", "1.2.3.3", 8083),
      ...masterVars,
    ],
  },
  {
    name: "master service in pod ns",
    ns: "test2",
    enableServiceLinks: false,
    container: { env: [{ name: "FOO", value: "ZAP" }] },
    expectedEnvs: [{ name: "FOO", value: "ZAP" }, ...masterVars],
  },
  {
    name: "master service in pod ns, service env vars",
    ns: "test2",
    enableServiceLinks: true,
    container: { env: [{ name: "FOO", value: "ZAP" }] },
    expectedEnvs: [
      { name: "FOO", value: "ZAP" },
      ...serviceVars("TEST", "1.2.3.5", 8085),
      ...serviceVars("KUBERNETES", "1.2.3.4", 8084),
    ],
  },
  {
    name: "pod in master service ns",
    ns: "default",
    enableServiceLinks: false,
    container: {},
    expectedEnvs: masterVars,
  },
  {
    name: "pod in master service ns, service env vars",
    ns: "default",
    enableServiceLinks: true,
    container: {},
    expectedEnvs: [...serviceVars("NOT_SPECIAL", "1.2.3.8", 8088), ...masterVars],
  },
  {
    name: "downward api pod",
    ns: "downward-api",
    enableServiceLinks: false,
    container: {
      env: [
        fieldRef("POD_NAME", "metadata.name"),
        fieldRef("POD_NAMESPACE", "metadata.namespace"),
        fieldRef("POD_NODE_NAME", "spec.nodeName"),
        fieldRef("POD_SERVICE_ACCOUNT_NAME", "spec.serviceAccountName"),
        fieldRef("POD_IP", "status.podIP"),
        fieldRef("POD_IPS", "status.podIPs"),
        fieldRef("HOST_IP", "status.hostIP"),
        fieldRef("HOST_IPS", "status.hostIPs"),
      ],
    },
    podIPs: ["1.2.3.4", "fd00::6"],
    nilLister: true,
    expectedEnvs: [
      { name: "POD_NAME", value: "dapi-test-pod-name" },
      { name: "POD_NAMESPACE", value: "downward-api" },
      { name: "POD_NODE_NAME", value: "node-name" },
      { name: "POD_SERVICE_ACCOUNT_NAME", value: "special" },
      { name: "POD_IP", value: "1.2.3.4" },
      { name: "POD_IPS", value: "1.2.3.4,fd00::6" },
      { name: "HOST_IP", value: testKubeletHostIP },
      { name: "HOST_IPS", value: `${testKubeletHostIP},${testKubeletHostIPv6}` },
    ],
  },
  {
    name: "downward api pod ips reverse order",
    ns: "downward-api",
    enableServiceLinks: false,
    container: {
      env: [
        fieldRef("POD_IP", "status.podIP"),
        fieldRef("POD_IPS", "status.podIPs"),
        fieldRef("HOST_IP", "status.hostIP"),
        fieldRef("HOST_IPS", "status.hostIPs"),
      ],
    },
    podIPs: ["fd00::6", "1.2.3.4"],
    nilLister: true,
    expectedEnvs: [
      { name: "POD_IP", value: "1.2.3.4" },
      { name: "POD_IPS", value: "1.2.3.4,fd00::6" },
      { name: "HOST_IP", value: testKubeletHostIP },
      { name: "HOST_IPS", value: `${testKubeletHostIP},${testKubeletHostIPv6}` },
    ],
  },
  {
    name: "downward api pod ips multiple ips",
    ns: "downward-api",
    enableServiceLinks: false,
    container: { env: [fieldRef("POD_IP", "status.podIP"), fieldRef("POD_IPS", "status.podIPs")] },
    podIPs: ["1.2.3.4", "192.168.1.1.", "fd00::6"],
    nilLister: true,
    expectedEnvs: [
      { name: "POD_IP", value: "1.2.3.4" },
      { name: "POD_IPS", value: "1.2.3.4,fd00::6" },
    ],
  },
  {
    name: "downward api: labels and annotations through the downward API paths",
    ns: "downward-api",
    enableServiceLinks: false,
    container: {
      env: [
        fieldRef("POD_UID", "metadata.uid"),
        fieldRef("APP", "metadata.labels['app']"),
        fieldRef("LABELS", "metadata.labels"),
        fieldRef("NOTE", "metadata.annotations['note']"),
      ],
    },
    nilLister: true,
    expectedEnvs: [
      { name: "POD_UID", value: "uid-1" },
      { name: "APP", value: "web" },
      { name: "LABELS", value: 'app="web"\ntier="front \\"end\\""' },
      { name: "NOTE", value: "a\nb" },
    ],
  },
  {
    name: "downward api: an unsupported field path fails",
    ns: "downward-api",
    enableServiceLinks: false,
    container: { env: [fieldRef("X", "spec.nope")] },
    nilLister: true,
    expectedError: "field label not supported: spec.nope",
  },
  {
    name: "env expansion",
    ns: "test1",
    enableServiceLinks: false,
    container: {
      env: [
        { name: "TEST_LITERAL", value: "test-test-test" },
        fieldRef("POD_NAME", "metadata.name"),
        { name: "OUT_OF_ORDER_TEST", value: "$(OUT_OF_ORDER_TARGET)" },
        { name: "OUT_OF_ORDER_TARGET", value: "FOO" },
        { name: "EMPTY_VAR" },
        { name: "EMPTY_TEST", value: "foo-$(EMPTY_VAR)" },
        { name: "POD_NAME_TEST2", value: "test2-$(POD_NAME)" },
        { name: "POD_NAME_TEST3", value: "$(POD_NAME_TEST2)-3" },
        { name: "LITERAL_TEST", value: "literal-$(TEST_LITERAL)" },
        { name: "TEST_UNDEFINED", value: "$(UNDEFINED_VAR)" },
        {
          name: "SERVICE_VAR_TEST",
          value: "$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)",
        },
        { name: "ESCAPE_TEST", value: "$$(KUBERNETES_SERVICE_HOST)" },
      ],
    },
    expectedEnvs: [
      { name: "TEST_LITERAL", value: "test-test-test" },
      { name: "POD_NAME", value: "dapi-test-pod-name" },
      { name: "OUT_OF_ORDER_TEST", value: "$(OUT_OF_ORDER_TARGET)" },
      { name: "OUT_OF_ORDER_TARGET", value: "FOO" },
      { name: "EMPTY_VAR", value: "" },
      { name: "EMPTY_TEST", value: "foo-" },
      { name: "POD_NAME_TEST2", value: "test2-dapi-test-pod-name" },
      { name: "POD_NAME_TEST3", value: "test2-dapi-test-pod-name-3" },
      { name: "LITERAL_TEST", value: "literal-test-test-test" },
      { name: "TEST_UNDEFINED", value: "$(UNDEFINED_VAR)" },
      { name: "SERVICE_VAR_TEST", value: "1.2.3.1:8081" },
      { name: "ESCAPE_TEST", value: "$(KUBERNETES_SERVICE_HOST)" },
      ...masterVars,
    ],
  },
  {
    name: "configmapkeyref_missing_optional",
    ns: "test",
    enableServiceLinks: false,
    container: {
      env: [{
        name: "POD_NAME",
        valueFrom: {
          configMapKeyRef: { name: "missing-config-map", key: "key", optional: true },
        },
      }],
    },
    expectedEnvs: masterVars,
  },
  {
    name: "configmapkeyref_missing_key_optional",
    ns: "test",
    enableServiceLinks: false,
    container: {
      env: [{
        name: "POD_NAME",
        valueFrom: { configMapKeyRef: { name: "test-config-map", key: "key", optional: true } },
      }],
    },
    nilLister: true,
    configMap: testConfigMap({ a: "b" }),
    expectedEnvs: [],
  },
  {
    name: "configmapkeyref_missing_key: kubelet's message",
    ns: "test",
    enableServiceLinks: false,
    container: {
      env: [{ name: "A", valueFrom: { configMapKeyRef: { name: "test-config-map", key: "key" } } }],
    },
    nilLister: true,
    configMap: testConfigMap({ a: "b" }),
    expectedError: "couldn't find key key in ConfigMap test/test-config-map",
  },
  {
    name: "configmapkeyref: the key's value",
    ns: "test",
    enableServiceLinks: false,
    container: {
      env: [{ name: "A", valueFrom: { configMapKeyRef: { name: "test-config-map", key: "a" } } }],
    },
    nilLister: true,
    configMap: testConfigMap({ a: "b" }),
    expectedEnvs: [{ name: "A", value: "b" }],
  },
  {
    name: "configmapkeyref_missing: the API's not found",
    ns: "test",
    enableServiceLinks: false,
    container: {
      env: [{ name: "A", valueFrom: { configMapKeyRef: { name: "gone", key: "a" } } }],
    },
    nilLister: true,
    expectedError: 'configmaps "gone" not found',
  },
  {
    name: "configmapkeyref without an API server: no kubeClient",
    ns: "test",
    enableServiceLinks: false,
    container: {
      env: [{
        name: "A",
        valueFrom: { configMapKeyRef: { name: "cm", key: "a", optional: true } },
      }],
    },
    nilLister: true,
    noKubeClient: true,
    expectedError: "couldn't get configMap test/cm, no kubeClient defined",
  },
  {
    name: "secretkeyref_missing_optional",
    ns: "test",
    enableServiceLinks: false,
    container: {
      env: [{
        name: "POD_NAME",
        valueFrom: { secretKeyRef: { name: "missing-secret", key: "key", optional: true } },
      }],
    },
    expectedEnvs: masterVars,
  },
  {
    name: "secretkeyref_missing_key_optional",
    ns: "test",
    enableServiceLinks: false,
    container: {
      env: [{
        name: "POD_NAME",
        valueFrom: { secretKeyRef: { name: "test-secret", key: "key", optional: true } },
      }],
    },
    nilLister: true,
    secret: testSecret({ a: "b" }),
    expectedEnvs: [],
  },
  {
    name: "secretkeyref_missing_key: kubelet's message",
    ns: "test",
    enableServiceLinks: false,
    container: {
      env: [{ name: "A", valueFrom: { secretKeyRef: { name: "test-secret", key: "key" } } }],
    },
    nilLister: true,
    secret: testSecret({ a: "b" }),
    expectedError: "couldn't find key key in Secret test/test-secret",
  },
  {
    name: "secretkeyref: the decoded value",
    ns: "test",
    enableServiceLinks: false,
    container: {
      env: [{ name: "A", valueFrom: { secretKeyRef: { name: "test-secret", key: "a" } } }],
    },
    nilLister: true,
    secret: testSecret({ a: "s3cr\u00e9t" }),
    expectedEnvs: [{ name: "A", value: "s3cr\u00e9t" }],
  },
  {
    name: "configmap",
    ns: "test1",
    enableServiceLinks: false,
    container: {
      envFrom: [
        { configMapRef: { name: "test-config-map" } },
        { prefix: "p_", configMapRef: { name: "test-config-map" } },
      ],
      env: [
        { name: "TEST_LITERAL", value: "test-test-test" },
        { name: "EXPANSION_TEST", value: "$(REPLACE_ME)" },
        { name: "DUPE_TEST", value: "ENV_VAR" },
      ],
    },
    configMap: testConfigMap({ REPLACE_ME: "FROM_CONFIG_MAP", DUPE_TEST: "CONFIG_MAP" }),
    expectedEnvs: [
      { name: "TEST_LITERAL", value: "test-test-test" },
      { name: "REPLACE_ME", value: "FROM_CONFIG_MAP" },
      { name: "EXPANSION_TEST", value: "FROM_CONFIG_MAP" },
      { name: "DUPE_TEST", value: "ENV_VAR" },
      { name: "p_REPLACE_ME", value: "FROM_CONFIG_MAP" },
      { name: "p_DUPE_TEST", value: "CONFIG_MAP" },
      ...masterVars,
    ],
  },
  {
    name: "configmap allow prefix to start with a digital",
    ns: "test1",
    enableServiceLinks: false,
    container: {
      envFrom: [
        { configMapRef: { name: "test-config-map" } },
        { prefix: "1_", configMapRef: { name: "test-config-map" } },
      ],
      env: [
        { name: "TEST_LITERAL", value: "test-test-test" },
        { name: "EXPANSION_TEST", value: "$(REPLACE_ME)" },
        { name: "DUPE_TEST", value: "ENV_VAR" },
      ],
    },
    configMap: testConfigMap({ REPLACE_ME: "FROM_CONFIG_MAP", DUPE_TEST: "CONFIG_MAP" }),
    expectedEnvs: [
      { name: "TEST_LITERAL", value: "test-test-test" },
      { name: "REPLACE_ME", value: "FROM_CONFIG_MAP" },
      { name: "EXPANSION_TEST", value: "FROM_CONFIG_MAP" },
      { name: "DUPE_TEST", value: "ENV_VAR" },
      { name: "1_REPLACE_ME", value: "FROM_CONFIG_MAP" },
      { name: "1_DUPE_TEST", value: "CONFIG_MAP" },
      ...masterVars,
    ],
  },
  {
    name: "configmap, service env vars",
    ns: "test1",
    enableServiceLinks: true,
    container: {
      envFrom: [
        { configMapRef: { name: "test-config-map" } },
        { prefix: "p_", configMapRef: { name: "test-config-map" } },
      ],
      env: [
        { name: "TEST_LITERAL", value: "test-test-test" },
        { name: "EXPANSION_TEST", value: "$(REPLACE_ME)" },
        { name: "DUPE_TEST", value: "ENV_VAR" },
      ],
    },
    configMap: testConfigMap({ REPLACE_ME: "FROM_CONFIG_MAP", DUPE_TEST: "CONFIG_MAP" }),
    expectedEnvs: [
      { name: "TEST_LITERAL", value: "test-test-test" },
      ...serviceVars("TEST", "1.2.3.3", 8083),
      { name: "REPLACE_ME", value: "FROM_CONFIG_MAP" },
      { name: "EXPANSION_TEST", value: "FROM_CONFIG_MAP" },
      { name: "DUPE_TEST", value: "ENV_VAR" },
      { name: "p_REPLACE_ME", value: "FROM_CONFIG_MAP" },
      { name: "p_DUPE_TEST", value: "CONFIG_MAP" },
      ...masterVars,
    ],
  },
  {
    name: "configmap_missing",
    ns: "test1",
    enableServiceLinks: false,
    container: { envFrom: [{ configMapRef: { name: "test-config-map" } }] },
    expectedError: 'configmaps "test-config-map" not found',
  },
  {
    name: "configmap_missing_optional",
    ns: "test",
    enableServiceLinks: false,
    container: {
      envFrom: [{ configMapRef: { optional: true, name: "missing-config-map" } }],
    },
    expectedEnvs: masterVars,
  },
  {
    name: "configmap_invalid_keys_valid",
    ns: "test",
    enableServiceLinks: false,
    container: { envFrom: [{ prefix: "p_", configMapRef: { name: "test-config-map" } }] },
    configMap: testConfigMap({ "1234": "abc" }),
    expectedEnvs: [{ name: "p_1234", value: "abc" }, ...masterVars],
  },
  {
    name: "secret",
    ns: "test1",
    enableServiceLinks: false,
    container: {
      envFrom: [
        { secretRef: { name: "test-secret" } },
        { prefix: "p_", secretRef: { name: "test-secret" } },
      ],
      env: [
        { name: "TEST_LITERAL", value: "test-test-test" },
        { name: "EXPANSION_TEST", value: "$(REPLACE_ME)" },
        { name: "DUPE_TEST", value: "ENV_VAR" },
      ],
    },
    secret: testSecret({ REPLACE_ME: "FROM_SECRET", DUPE_TEST: "SECRET" }),
    expectedEnvs: [
      { name: "TEST_LITERAL", value: "test-test-test" },
      { name: "REPLACE_ME", value: "FROM_SECRET" },
      { name: "EXPANSION_TEST", value: "FROM_SECRET" },
      { name: "DUPE_TEST", value: "ENV_VAR" },
      { name: "p_REPLACE_ME", value: "FROM_SECRET" },
      { name: "p_DUPE_TEST", value: "SECRET" },
      ...masterVars,
    ],
  },
  {
    name: "secret_missing",
    ns: "test1",
    enableServiceLinks: false,
    container: { envFrom: [{ secretRef: { name: "test-secret" } }] },
    expectedError: 'secrets "test-secret" not found',
  },
  {
    name: "secret_missing_optional",
    ns: "test",
    enableServiceLinks: false,
    container: { envFrom: [{ secretRef: { name: "missing-secret", optional: true } }] },
    expectedEnvs: masterVars,
  },
  {
    name: "nil_enableServiceLinks",
    ns: "test",
    enableServiceLinks: null as unknown as boolean,
    container: {},
    expectedError: "nil pod.spec.enableServiceLinks encountered, cannot construct envvars",
  },
];

const byName = (a: EnvVar, b: EnvVar) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

function sourcesFor(tc: TestCase): EnvironmentSources {
  const lister: ServiceLister = { list: () => services, hasSynced: () => !tc.unsyncedServices };
  return {
    serviceLister: tc.nilLister ? undefined : lister,
    configMapManager: tc.noKubeClient ? undefined : {
      getConfigMap: (_ns, name) =>
        tc.configMap
          ? Promise.resolve(tc.configMap)
          : Promise.reject(newNotFound({ resource: "configmaps" }, name)),
    },
    secretManager: tc.noKubeClient ? undefined : {
      getSecret: (_ns, name) =>
        tc.secret
          ? Promise.resolve(tc.secret)
          : Promise.reject(newNotFound({ resource: "secrets" }, name)),
    },
    getHostIPs: () => [testKubeletHostIP, testKubeletHostIPv6],
    getNodeAllocatable: () => ({ cpu: "4", memory: "8Gi" }),
  };
}

function testPod(tc: TestCase, container: Container): Pod {
  return {
    metadata: {
      name: "dapi-test-pod-name",
      namespace: tc.ns,
      uid: "uid-1",
      labels: { app: "web", tier: 'front "end"' },
      annotations: {
        note: "a\nb",
        ...(tc.staticPod ? { "kubernetes.io/config.source": "file" } : {}),
      },
    },
    spec: {
      serviceAccountName: "special",
      nodeName: "node-name",
      enableServiceLinks: tc.enableServiceLinks,
      containers: [container],
    },
  };
}

Deno.test("TestMakeEnvironmentVariables", async (t) => {
  for (const tc of cases) {
    await t.step(tc.name, async () => {
      const container = { name: "c", ...tc.container } as Container;
      const podIPs = tc.podIPs ?? ["1.2.3.4"];
      const run = () =>
        makeEnvironmentVariables(
          testPod(tc, container),
          container,
          { podIP: podIPs[0], podIPs },
          sourcesFor(tc),
        );
      if (tc.expectedError !== undefined) {
        await rejects(run, { message: tc.expectedError });
        return;
      }
      const got = await run();
      // Go builds the result from maps: kubelet's test sorts both sides.
      assertEquals([...got].sort(byName), [...tc.expectedEnvs!].sort(byName));
    });
  }
});

Deno.test("TestMakeEnvironmentVariables: env order is envFrom, env, then services", async () => {
  const tc = cases.find((c) => c.name === "configmap")!;
  const container = { name: "c", ...tc.container } as Container;
  const got = await makeEnvironmentVariables(
    testPod(tc, container),
    container,
    { podIP: "1.2.3.4", podIPs: ["1.2.3.4"] },
    sourcesFor(tc),
  );
  assertEquals(got.map((e) => e.name).slice(0, 6), [
    "REPLACE_ME",
    "DUPE_TEST",
    "p_REPLACE_ME",
    "p_DUPE_TEST",
    "TEST_LITERAL",
    "EXPANSION_TEST",
  ]);
});

Deno.test("TestPodResourceLimitsDefaulting", async (t) => {
  const resourceRef = (
    name: string,
    resource: string,
    divisor?: string,
    containerName?: string,
  ) => ({
    name,
    valueFrom: { resourceFieldRef: { resource, divisor, containerName } },
  });
  const container: Container = {
    name: "c",
    resources: { requests: { cpu: "250m", memory: "64Mi" }, limits: { memory: "128Mi" } },
    env: [
      resourceRef("CPU_LIMIT", "limits.cpu"),
      resourceRef("CPU_LIMIT_M", "limits.cpu", "1m"),
      resourceRef("CPU_REQUEST", "requests.cpu"),
      resourceRef("CPU_REQUEST_M", "requests.cpu", "1m"),
      resourceRef("MEMORY_LIMIT_MI", "limits.memory", "1Mi"),
      resourceRef("MEMORY_REQUEST", "requests.memory"),
      resourceRef("STORAGE_LIMIT", "limits.ephemeral-storage"),
      resourceRef("OTHER_MEMORY", "limits.memory", "1Mi", "other"),
    ],
  };
  const other: Container = { name: "other" };
  const pod: Pod = {
    metadata: { name: "p", namespace: "ns" },
    spec: { enableServiceLinks: false, containers: [container, other] },
  };
  const got = await makeEnvironmentVariables(pod, container, { podIP: "", podIPs: [] }, {
    getHostIPs: () => ["10.0.0.1"],
    getNodeAllocatable: () => ({ cpu: "3", memory: "8Gi" }),
  });
  const want: Record<string, string> = {
    // No cpu limit: the node's allocatable (3 cores), rounded up per divisor.
    CPU_LIMIT: "3",
    CPU_LIMIT_M: "3000",
    CPU_REQUEST: "1",
    CPU_REQUEST_M: "250",
    MEMORY_LIMIT_MI: "128",
    MEMORY_REQUEST: String(64 * 2 ** 20),
    // Not in the allocatable and not set: 0.
    STORAGE_LIMIT: "0",
    // Another container without limits: the allocatable memory.
    OTHER_MEMORY: String(8 * 1024),
  };
  for (const [name, value] of Object.entries(want)) {
    await t.step(name, () => assertEquals(got.find((e) => e.name === name)?.value, value));
  }
  await t.step("an unsupported resource fails with kubelet's message", async () => {
    const bad = { ...container, env: [resourceRef("X", "limits.nvidia.com/gpu")] };
    await rejects(
      makeEnvironmentVariables({ ...pod, spec: { ...pod.spec, containers: [bad] } }, bad, {
        podIP: "",
        podIPs: [],
      }, { getHostIPs: () => [], getNodeAllocatable: () => ({}) }),
      { message: "unsupported container resource : limits.nvidia.com/gpu" },
    );
  });
});

Deno.test("TestFromServices", () => {
  const sv: Service[] = [
    {
      metadata: { name: "foo-bar" },
      spec: {
        selector: { bar: "baz" },
        clusterIP: "1.2.3.4",
        ports: [{ port: 8080, protocol: "TCP" }],
      },
    },
    {
      metadata: { name: "abc-123" },
      spec: {
        selector: { bar: "baz" },
        clusterIP: "5.6.7.8",
        ports: [
          { name: "u-d-p", port: 8081, protocol: "UDP" },
          { name: "t-c-p", port: 8081, protocol: "TCP" },
        ],
      },
    },
    {
      metadata: { name: "q-u-u-x" },
      spec: {
        selector: { bar: "baz" },
        clusterIP: "9.8.7.6",
        ports: [{ port: 8082, protocol: "TCP" }, { name: "8083", port: 8083, protocol: "TCP" }],
      },
    },
    {
      metadata: { name: "svrc-clusterip-none" },
      spec: { selector: { bar: "baz" }, clusterIP: "None", ports: [{ port: 8082 }] },
    },
    {
      metadata: { name: "svrc-clusterip-empty" },
      spec: { selector: { bar: "baz" }, clusterIP: "", ports: [{ port: 8082 }] },
    },
    {
      metadata: { name: "super-ipv6" },
      spec: { clusterIP: "2001:DB8::", ports: [{ name: "u-d-p", port: 8084, protocol: "UDP" }] },
    },
  ];
  assertEquals(fromServices(sv), [
    { name: "FOO_BAR_SERVICE_HOST", value: "1.2.3.4" },
    { name: "FOO_BAR_SERVICE_PORT", value: "8080" },
    { name: "FOO_BAR_PORT", value: "tcp://1.2.3.4:8080" },
    { name: "FOO_BAR_PORT_8080_TCP", value: "tcp://1.2.3.4:8080" },
    { name: "FOO_BAR_PORT_8080_TCP_PROTO", value: "tcp" },
    { name: "FOO_BAR_PORT_8080_TCP_PORT", value: "8080" },
    { name: "FOO_BAR_PORT_8080_TCP_ADDR", value: "1.2.3.4" },
    { name: "ABC_123_SERVICE_HOST", value: "5.6.7.8" },
    { name: "ABC_123_SERVICE_PORT", value: "8081" },
    { name: "ABC_123_SERVICE_PORT_U_D_P", value: "8081" },
    { name: "ABC_123_SERVICE_PORT_T_C_P", value: "8081" },
    { name: "ABC_123_PORT", value: "udp://5.6.7.8:8081" },
    { name: "ABC_123_PORT_8081_UDP", value: "udp://5.6.7.8:8081" },
    { name: "ABC_123_PORT_8081_UDP_PROTO", value: "udp" },
    { name: "ABC_123_PORT_8081_UDP_PORT", value: "8081" },
    { name: "ABC_123_PORT_8081_UDP_ADDR", value: "5.6.7.8" },
    { name: "ABC_123_PORT_8081_TCP", value: "tcp://5.6.7.8:8081" },
    { name: "ABC_123_PORT_8081_TCP_PROTO", value: "tcp" },
    { name: "ABC_123_PORT_8081_TCP_PORT", value: "8081" },
    { name: "ABC_123_PORT_8081_TCP_ADDR", value: "5.6.7.8" },
    { name: "Q_U_U_X_SERVICE_HOST", value: "9.8.7.6" },
    { name: "Q_U_U_X_SERVICE_PORT", value: "8082" },
    { name: "Q_U_U_X_SERVICE_PORT__8083", value: "8083" },
    { name: "Q_U_U_X_PORT", value: "tcp://9.8.7.6:8082" },
    { name: "Q_U_U_X_PORT_8082_TCP", value: "tcp://9.8.7.6:8082" },
    { name: "Q_U_U_X_PORT_8082_TCP_PROTO", value: "tcp" },
    { name: "Q_U_U_X_PORT_8082_TCP_PORT", value: "8082" },
    { name: "Q_U_U_X_PORT_8082_TCP_ADDR", value: "9.8.7.6" },
    { name: "Q_U_U_X_PORT_8083_TCP", value: "tcp://9.8.7.6:8083" },
    { name: "Q_U_U_X_PORT_8083_TCP_PROTO", value: "tcp" },
    { name: "Q_U_U_X_PORT_8083_TCP_PORT", value: "8083" },
    { name: "Q_U_U_X_PORT_8083_TCP_ADDR", value: "9.8.7.6" },
    { name: "SUPER_IPV6_SERVICE_HOST", value: "2001:DB8::" },
    { name: "SUPER_IPV6_SERVICE_PORT", value: "8084" },
    { name: "SUPER_IPV6_SERVICE_PORT_U_D_P", value: "8084" },
    { name: "SUPER_IPV6_PORT", value: "udp://[2001:DB8::]:8084" },
    { name: "SUPER_IPV6_PORT_8084_UDP", value: "udp://[2001:DB8::]:8084" },
    { name: "SUPER_IPV6_PORT_8084_UDP_PROTO", value: "udp" },
    { name: "SUPER_IPV6_PORT_8084_UDP_PORT", value: "8084" },
    { name: "SUPER_IPV6_PORT_8084_UDP_ADDR", value: "2001:DB8::" },
  ]);
});

Deno.test("TestGenerateContainerConfig: command and args expand against the environment", () => {
  const container: Container = {
    name: "c",
    image: "busybox",
    command: ["sh", "-c", "echo $(POD_NAME) $(MISSING) $$(POD_NAME)"],
    args: ["$(KUBERNETES_SERVICE_HOST)"],
    env: [fieldRef("POD_NAME", "metadata.name")],
  };
  const pod: Pod = {
    metadata: { name: "p", namespace: "ns", uid: "u" },
    spec: { containers: [container] },
  };
  const envs = [{ name: "POD_NAME", value: "p" }, {
    name: "KUBERNETES_SERVICE_HOST",
    value: "10.0.0.1",
  }];
  const config = generateContainerConfig(pod, container, {
    restartCount: 0,
    nodeName: "n",
    envs,
    linux: { ...defaultLinuxConfigOptions, memoryCapacity: 2 ** 30, seccompProfileRoot: "/x" },
  });
  assertEquals(config.command, ["sh", "-c", "echo p $(MISSING) $(POD_NAME)"]);
  assertEquals(config.args, ["10.0.0.1"]);
  assertEquals(config.envs, [
    { key: "POD_NAME", value: "p" },
    { key: "KUBERNETES_SERVICE_HOST", value: "10.0.0.1" },
  ]);
});
