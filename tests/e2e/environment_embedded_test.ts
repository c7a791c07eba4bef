/**
 * The container environment on the embedded runtime (host processes, no API server): a static
 * pod's process gets its env as kubelet builds it (literal values with `$(VAR)` expanded, the
 * downward API, resource fields defaulted to the node's allocatable, command and args expanded),
 * checked in what the process itself wrote from its environment; a config map reference fails
 * the container with kubelet's `CreateContainerConfigError` message, since there is no API server
 * to read it from.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { containerStatus, startAgent, waitFor } from "./helpers.ts";

Deno.test({
  name: "environment: a host process gets kubelet's env (embedded runtime)",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const out = await Deno.makeTempDir({ prefix: "probelet-env-embedded-" });
    const envFile = join(out, "env");
    const argsFile = join(out, "args");
    const manifest = `
apiVersion: v1
kind: Pod
metadata:
  name: envpod
  labels: { app: web }
  annotations: { note: hello }
spec:
  containers:
  - name: app
    image: host
    command: ["sh", "-c"]
    args:
    - 'printf "%s\\n" "$@" > ${argsFile}; env > ${envFile}.tmp && mv ${envFile}.tmp ${envFile}; trap "exit 0" TERM; while :; do sleep 1; done'
    - sh
    - "$(GREETING)"
    - "$$(GREETING)"
    - "$(MISSING)"
    env:
    - { name: NAME, value: world }
    - { name: GREETING, value: "hello $(NAME)" }
    - { name: ESCAPED, value: "$$(NAME)" }
    - { name: POD_NAME, valueFrom: { fieldRef: { fieldPath: metadata.name } } }
    - { name: POD_NAMESPACE, valueFrom: { fieldRef: { fieldPath: metadata.namespace } } }
    - { name: APP, valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } }
    - { name: NOTE, valueFrom: { fieldRef: { fieldPath: "metadata.annotations['note']" } } }
    - { name: NODE, valueFrom: { fieldRef: { fieldPath: spec.nodeName } } }
    - { name: POD_IP, valueFrom: { fieldRef: { fieldPath: status.podIP } } }
    - { name: HOST_IP, valueFrom: { fieldRef: { fieldPath: status.hostIP } } }
    - { name: CPU_REQUEST_M, valueFrom: { resourceFieldRef: { resource: requests.cpu, divisor: 1m } } }
    - { name: POD_ID, value: "$(POD_NAME)/$(POD_NAMESPACE)" }
`;
    const agent = await startAgent("embedded", { "envpod.yaml": manifest });
    try {
      const env = await waitFor("the process wrote its environment", async () => {
        try {
          return await Deno.readTextFile(envFile);
        } catch {
          return undefined;
        }
      }, { describe: () => agent.pod("envpod")?.status });
      const vars = new Map(
        env.split("\n").filter((l) => l.includes("=")).map((l) => {
          const i = l.indexOf("=");
          return [l.slice(0, i), l.slice(i + 1)] as const;
        }),
      );
      await t.step("values, $(VAR) expansion and the downward API", () => {
        assertEquals(vars.get("NAME"), "world");
        assertEquals(vars.get("GREETING"), "hello world");
        assertEquals(vars.get("ESCAPED"), "$(NAME)");
        assertEquals(vars.get("POD_NAME"), "envpod-e2e");
        assertEquals(vars.get("POD_NAMESPACE"), "default");
        assertEquals(vars.get("APP"), "web");
        assertEquals(vars.get("NOTE"), "hello");
        assertEquals(vars.get("NODE"), "e2e");
        assertEquals(vars.get("POD_IP"), "127.0.0.1");
        assert(/^\d+\.\d+\.\d+\.\d+$/.test(vars.get("HOST_IP") ?? ""), `${vars.get("HOST_IP")}`);
        assertEquals(vars.get("CPU_REQUEST_M"), "0");
        assertEquals(vars.get("POD_ID"), "envpod-e2e/default");
        // No API server: no service variables, as kubelet without one.
        assert(![...vars.keys()].some((k) => k.startsWith("KUBERNETES_")), "no service links");
      });
      await t.step("args expanded against the environment", async () => {
        assertEquals(await Deno.readTextFile(argsFile), "hello world\n$(GREETING)\n$(MISSING)\n");
      });

      await t.step("a config map without an API server: CreateContainerConfigError", async () => {
        await agent.writeManifest(
          "cm.yaml",
          `
apiVersion: v1
kind: Pod
metadata: { name: cmpod }
spec:
  containers:
  - name: app
    image: host
    command: ["sleep", "30"]
    env:
    - { name: A, valueFrom: { configMapKeyRef: { name: cfg, key: a } } }
`,
        );
        const waiting = await waitFor("cmpod waiting", () => {
          const w = containerStatus(agent.pod("cmpod"), "app")?.state?.waiting;
          return w?.reason === "CreateContainerConfigError" && w;
        });
        assertEquals(waiting.message, "couldn't get configMap default/cfg, no kubeClient defined");
        assert(
          agent.eventsOf("cmpod").includes(
            "Warning Failed Error: couldn't get configMap default/cfg, no kubeClient defined",
          ),
          agent.eventsOf("cmpod").join("\n"),
        );
      });
    } finally {
      await agent.close();
      await Deno.remove(out, { recursive: true });
    }
  },
});
