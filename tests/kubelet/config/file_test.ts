/**
 * Tests of the static pod file source: decoding, validation messages, defaults, identity, folder
 * listing and the watch. Modelled on kubelet's pkg/kubelet/config/file_test.go and common_test.go.
 */
import nodeAssert from "node:assert/strict";
import { join } from "node:path";
import {
  configHashAnnotationKey,
  loadPodManifests,
  parsePodManifest,
  type PodUpdate,
  watchManifests,
} from "../../../src/kubelet/config/mod.ts";
import { FakeClock } from "../../../src/util/clock.ts";

const nodeName = "node-a";

function assert(value: unknown, message?: string): asserts value {
  if (message === undefined) nodeAssert.ok(value);
  else nodeAssert.ok(value, message);
}
function assertEquals<T>(actual: unknown, expected: T, message?: string): void {
  if (message === undefined) nodeAssert.deepStrictEqual(actual, expected);
  else nodeAssert.deepStrictEqual(actual, expected, message);
}
function assertNotEquals(actual: unknown, expected: unknown, message?: string): void {
  if (message === undefined) nodeAssert.notDeepStrictEqual(actual, expected);
  else nodeAssert.notDeepStrictEqual(actual, expected, message);
}
const assertMatch = (actual: string, re: RegExp) => nodeAssert.match(actual, re);

/** A valid manifest; `extra` lines are spliced into the first container. */
function podYaml(name: string, containerLines: string[] = [], podLines: string[] = []): string {
  return [
    "apiVersion: v1",
    "kind: Pod",
    "metadata:",
    `  name: ${name}`,
    "spec:",
    ...podLines.map((l) => `  ${l}`),
    "  containers:",
    "  - name: app",
    "    image: busybox:1",
    "    command: [sh, -c, sleep 1000]",
    ...containerLines.map((l) => `    ${l}`),
    "",
  ].join("\n");
}

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "probelet-config-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function parse(text: string, file = "web.yaml") {
  return parsePodManifest(text, { file, nodeName });
}

Deno.test("TestDecodeValidPod", async (t) => {
  await t.step("YAML: defaults and static pod identity", async () => {
    const { pods, errors } = await parse(podYaml("web", [
      "ports: [{name: http, containerPort: 8080}]",
      "livenessProbe:",
      "  httpGet: {port: http}",
      "readinessProbe:",
      "  tcpSocket: {port: 8080}",
      "  periodSeconds: 0",
      "  initialDelaySeconds: 5",
      "startupProbe:",
      "  exec: {command: [cat, /tmp/ok]}",
      "  failureThreshold: 30",
    ]));
    assertEquals(errors.map((e) => e.message), []);
    assertEquals(pods.length, 1);
    const pod = pods[0];
    assertEquals(pod.metadata.name, "web-node-a");
    assertEquals(pod.metadata.namespace, "default");
    assertMatch(
      pod.metadata.uid!,
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
    assertEquals(pod.metadata.annotations?.[configHashAnnotationKey], pod.metadata.uid);
    assertEquals(pod.metadata.annotations?.["kubernetes.io/config.source"], "file");
    assertEquals(pod.spec.nodeName, nodeName);
    assertEquals(pod.spec.restartPolicy, "Always");
    assertEquals(pod.spec.terminationGracePeriodSeconds, 30);
    assertEquals(pod.status, { phase: "Pending" });
    const c = pod.spec.containers[0];
    assertEquals(c.ports, [{ name: "http", containerPort: 8080, protocol: "TCP" }]);
    assertEquals(c.imagePullPolicy, "IfNotPresent");
    assertEquals(c.livenessProbe, {
      httpGet: { port: "http", path: "/", scheme: "HTTP" },
      initialDelaySeconds: 0,
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    });
    assertEquals(c.readinessProbe, {
      tcpSocket: { port: 8080 },
      initialDelaySeconds: 5,
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    });
    assertEquals(c.startupProbe?.failureThreshold, 30);
  });

  await t.step("JSON is YAML", async () => {
    const json = JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "api", namespace: "tools", uid: "fixed-uid" },
      spec: {
        restartPolicy: "Never",
        containers: [{
          name: "app",
          image: "busybox",
          readinessProbe: { grpc: { port: 9090 }, periodSeconds: 2 },
        }],
      },
    });
    const { pods, errors } = await parse(json, "api.json");
    assertEquals(errors, []);
    assertEquals(pods[0].metadata.name, "api-node-a");
    assertEquals(pods[0].metadata.namespace, "tools");
    assertEquals(pods[0].metadata.uid, "fixed-uid", "a UID written in the manifest is kept");
    assertEquals(pods[0].spec.restartPolicy, "Never");
    assertEquals(pods[0].spec.containers[0].imagePullPolicy, "Always", "untagged image");
    assertEquals(pods[0].spec.containers[0].readinessProbe?.grpc, { port: 9090 });
  });

  await t.step("YAML 1.1 booleans and date-like strings", async () => {
    const { pods, errors } = await parse(
      podYaml("web", [], ["hostNetwork: on"]).replace(
        "  name: web",
        "  name: web\n  annotations:\n    built: 2024-01-02",
      ),
    );
    assertEquals(errors, []);
    assertEquals(pods[0].spec.hostNetwork, true);
    assertEquals(pods[0].metadata.annotations?.built, "2024-01-02");
  });

  await t.step("null fields are absent", async () => {
    const { pods, errors } = await parse(podYaml("web", ["livenessProbe:", "env: ~"]));
    assertEquals(errors, []);
    assertEquals("livenessProbe" in pods[0].spec.containers[0], false);
  });

  await t.step("multiple documents and a trailing ---", async () => {
    const text = `${podYaml("one")}---\n${podYaml("two")}---\n`;
    const { pods, errors } = await parse(text);
    assertEquals(errors, []);
    assertEquals(pods.map((p) => p.metadata.name), ["one-node-a", "two-node-a"]);
    assertNotEquals(pods[0].metadata.uid, pods[1].metadata.uid);
  });
});

Deno.test("TestValidationErrors", async (t) => {
  const cases: { name: string; text: string; errors: string[] }[] = [
    {
      name: "missing name",
      text: podYaml("web").replace("  name: web\n", "  labels: {app: web}\n"),
      errors: ["web.yaml: document 1: metadata.name: Required value"],
    },
    {
      name: "a numeric string port is a name, and not a valid one",
      text: podYaml("web", ["livenessProbe:", "  tcpSocket: {port: '8080'}"]),
      errors: [
        'web.yaml: document 1: spec.containers[0].livenessProbe.tcpSocket.port: "8080": must contain at least one letter (a-z)',
      ],
    },
    {
      name: "a malformed port name",
      text: podYaml("web", ["readinessProbe:", "  httpGet: {port: web_http}"]),
      errors: [
        'web.yaml: document 1: spec.containers[0].readinessProbe.httpGet.port: "web_http": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
      ],
    },
    {
      name: "port as boolean",
      text: podYaml("web", ["livenessProbe:", "  httpGet: {port: yes}"]),
      errors: [
        "web.yaml: document 1: spec.containers[0].livenessProbe.httpGet.port: must be an integer or a string, got boolean true",
      ],
    },
    {
      name: "port out of range",
      text: podYaml("web", ["livenessProbe:", "  grpc: {port: 70000}"]),
      errors: [
        "web.yaml: document 1: spec.containers[0].livenessProbe.grpc.port: 70000: must be between 1 and 65535, inclusive",
      ],
    },
    {
      name: "duplicate container name",
      text: podYaml("web") + "  - name: app\n    image: busybox\n",
      errors: ['web.yaml: document 1: spec.containers[1].name: Duplicate value: "app"'],
    },
    {
      name: "more than one handler",
      text: podYaml("web", [
        "livenessProbe:",
        "  exec: {command: [/bin/true]}",
        "  tcpSocket: {port: 80}",
      ]),
      errors: [
        "web.yaml: document 1: spec.containers[0].livenessProbe: may not specify more than 1 handler type",
      ],
    },
    {
      name: "no handler",
      text: podYaml("web", ["startupProbe:", "  periodSeconds: 1"]),
      errors: [
        "web.yaml: document 1: spec.containers[0].startupProbe: Required value: must specify a handler type",
      ],
    },
    {
      name: "liveness successThreshold",
      text: podYaml("web", ["livenessProbe:", "  tcpSocket: {port: 80}", "  successThreshold: 2"]),
      errors: [
        "web.yaml: document 1: spec.containers[0].livenessProbe.successThreshold: must be 1",
      ],
    },
    {
      name: "startup successThreshold",
      text: podYaml("web", ["startupProbe:", "  tcpSocket: {port: 80}", "  successThreshold: 3"]),
      errors: ["web.yaml: document 1: spec.containers[0].startupProbe.successThreshold: must be 1"],
    },
    {
      name: "negative probe fields",
      text: podYaml("web", [
        "readinessProbe:",
        "  tcpSocket: {port: 80}",
        "  periodSeconds: -1",
        "  failureThreshold: -3",
      ]),
      errors: [
        "web.yaml: document 1: spec.containers[0].readinessProbe.periodSeconds: must be greater than or equal to 0",
        "web.yaml: document 1: spec.containers[0].readinessProbe.failureThreshold: must be greater than or equal to 0",
      ],
    },
    {
      name: "probe field of the wrong type",
      text: podYaml("web", ["readinessProbe:", "  tcpSocket: {port: 80}", "  timeoutSeconds: 1s"]),
      errors: [
        'web.yaml: document 1: spec.containers[0].readinessProbe.timeoutSeconds: must be an integer, got string "1s"',
      ],
    },
    {
      name: "readiness terminationGracePeriodSeconds",
      text: podYaml("web", [
        "readinessProbe:",
        "  tcpSocket: {port: 80}",
        "  terminationGracePeriodSeconds: 5",
      ]),
      errors: [
        "web.yaml: document 1: spec.containers[0].readinessProbe.terminationGracePeriodSeconds: must not be set for readinessProbes",
      ],
    },
    {
      name: "exec without command",
      text: podYaml("web", ["livenessProbe:", "  exec: {command: []}"]),
      errors: [
        "web.yaml: document 1: spec.containers[0].livenessProbe.exec.command: Required value",
      ],
    },
    {
      name: "wrong kind",
      text: podYaml("web").replace("kind: Pod", "kind: Deployment"),
      errors: [
        'web.yaml: document 1: kind: Unsupported value: "Deployment": supported values: "Pod"',
      ],
    },
    {
      name: "wrong apiVersion",
      text: podYaml("web").replace("apiVersion: v1", "apiVersion: apps/v1"),
      errors: [
        'web.yaml: document 1: apiVersion: Unsupported value: "apps/v1": supported values: "v1"',
      ],
    },
    {
      name: "image required",
      text: podYaml("web").replace("    image: busybox:1\n", ""),
      errors: ["web.yaml: document 1: spec.containers[0].image: Required value"],
    },
    {
      name: "container name not a DNS-1123 label",
      text: podYaml("web").replace("- name: app", "- name: App_1"),
      errors: [
        `web.yaml: document 1: spec.containers[0].name: "App_1" is not a valid name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', start and end with an alphanumeric character, and be at most 63 characters (e.g. "my-name" or "123-abc")`,
      ],
    },
    {
      name: "pod name not a DNS-1123 subdomain",
      text: podYaml("Web"),
      errors: [
        `web.yaml: document 1: metadata.name: "Web" is not a valid name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', start and end with an alphanumeric character, and be at most 253 characters (e.g. "example.com")`,
      ],
    },
    {
      name: "no containers",
      text: "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: []}\n",
      errors: ["web.yaml: document 1: spec.containers: Required value"],
    },
    {
      name: "restartPolicy",
      text: podYaml("web", [], ["restartPolicy: Sometimes"]),
      errors: [
        'web.yaml: document 1: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
      ],
    },
    {
      name: "label value of the wrong type",
      text: podYaml("web").replace("  name: web\n", "  name: web\n  labels: {version: 2}\n"),
      errors: [
        'web.yaml: document 1: metadata.labels["version"]: must be a string, got integer 2',
      ],
    },
    {
      name: "probes on a plain init container",
      text: podYaml("web", [], [
        "initContainers:",
        "- name: init",
        "  image: busybox",
        "  readinessProbe: {tcpSocket: {port: 80}}",
      ]),
      errors: [
        "web.yaml: document 1: spec.initContainers[0].readinessProbe: may not be set for init containers without restartPolicy=Always",
      ],
    },
    {
      name: "not a mapping",
      text: "- a\n- b\n",
      errors: ["web.yaml: document 1: must be a mapping (a Pod object), got a list"],
    },
    {
      name: "YAML syntax error",
      text: "apiVersion: v1\nkind: Pod\nkind: Pod\n",
      errors: ["web.yaml: document 1: Map keys must be unique at line 3, column 1"],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const { pods, errors } = await parse(c.text);
      assertEquals(errors.map((e) => e.message), c.errors);
      assertEquals(pods, []);
    });
  }

  await t.step("errors carry their location", async () => {
    const text = `${podYaml("one")}---\n${
      podYaml("two", ["readinessProbe:", "  httpGet: {port: 0}"])
    }`;
    const { pods, errors } = await parse(text, "fixtures/pods/web.yaml");
    assertEquals(pods.map((p) => p.metadata.name), ["one-node-a"]);
    assertEquals(errors.length, 1);
    assertEquals(
      errors[0].message,
      "fixtures/pods/web.yaml: document 2: spec.containers[0].readinessProbe.httpGet.port: 0: must be between 1 and 65535, inclusive",
    );
    assertEquals(errors[0].file, "fixtures/pods/web.yaml");
    assertEquals(errors[0].document, 2);
    assertEquals(errors[0].field, "spec.containers[0].readinessProbe.httpGet.port");
    assertEquals(errors[0].detail, "0: must be between 1 and 65535, inclusive");
  });

  await t.step("a probe naming a port the container does not declare is accepted", async () => {
    // kubelet validates only the name's form; the probe errors at run time
    // ("port http not found"), as TestProbeErrorsOnUndeclaredNamedPort shows.
    const text = podYaml("web", [
      "readinessProbe:",
      "  httpGet: {port: http}",
      "livenessProbe:",
      "  tcpSocket: {port: admin}",
    ]);
    const { pods, errors } = await parse(text, "web.yaml");
    assertEquals(errors.map((e) => e.message), []);
    assertEquals(pods.map((p) => p.metadata.name), ["web-node-a"]);
  });
});

Deno.test("TestStaticPodUID", async (t) => {
  const text = podYaml("web", ["livenessProbe:", "  tcpSocket: {port: 80}"]);
  const uid = async (s: string, file = "web.yaml", node = nodeName) =>
    (await parsePodManifest(s, { file, nodeName: node })).pods[0].metadata.uid;

  await t.step(
    "stable for the same content",
    async () => assertEquals(await uid(text), await uid(text)),
  );
  await t.step("key order and formatting do not matter", async () => {
    const reordered = text.replace("kind: Pod\n", "").replace("apiVersion: v1\n", "") +
      "apiVersion: v1\nkind: Pod\n";
    assertEquals(await uid(reordered), await uid(text));
  });
  await t.step("different content", async () => {
    assertNotEquals(await uid(text.replace("port: 80", "port: 81")), await uid(text));
  });
  await t.step(
    "different file",
    async () => assertNotEquals(await uid(text, "other.yaml"), await uid(text)),
  );
  await t.step(
    "different node",
    async () => assertNotEquals(await uid(text, "web.yaml", "node-b"), await uid(text)),
  );

  await t.step("stable across reloads of a folder", async () => {
    await withTempDir(async (dir) => {
      await Deno.writeTextFile(join(dir, "web.yaml"), text);
      const first = await loadPodManifests(dir, { nodeName });
      const second = await loadPodManifests(dir, { nodeName });
      assertEquals(first.pods[0].metadata.uid, second.pods[0].metadata.uid);
      await Deno.writeTextFile(join(dir, "web.yaml"), text.replace("port: 80", "port: 81"));
      const third = await loadPodManifests(dir, { nodeName });
      assertNotEquals(third.pods[0].metadata.uid, first.pods[0].metadata.uid);
      assertEquals(third.pods[0].metadata.name, first.pods[0].metadata.name);
    });
  });
});

Deno.test("TestExtractFromDir", async (t) => {
  await t.step("one bad file does not stop the others", async () => {
    await withTempDir(async (dir) => {
      await Deno.writeTextFile(join(dir, "a.yaml"), podYaml("alpha"));
      await Deno.writeTextFile(
        join(dir, "b.yml"),
        podYaml("beta").replace("kind: Pod", "kind: Job"),
      );
      await Deno.writeTextFile(
        join(dir, "c.json"),
        JSON.stringify((await parse(podYaml("gamma"))).pods[0]),
      );
      await Deno.writeTextFile(join(dir, "d.yaml"), "{not: [valid");
      await Deno.writeTextFile(join(dir, ".hidden.yaml"), podYaml("hidden"));
      await Deno.writeTextFile(join(dir, "notes.txt"), "not a manifest");
      await Deno.mkdir(join(dir, "sub"));
      await Deno.writeTextFile(join(dir, "sub", "deep.yaml"), podYaml("deep"));

      const { pods, errors, files } = await loadPodManifests(dir, { nodeName });
      assertEquals(files, ["a.yaml", "b.yml", "c.json", "d.yaml"].map((f) => join(dir, f)));
      // c.json is an already-defaulted pod, so its name gets a second suffix and its UID is kept.
      assertEquals(pods.map((p) => p.metadata.name), ["alpha-node-a", "gamma-node-a-node-a"]);
      assertEquals(errors.length, 2, errors.map((e) => e.message).join("\n"));
      assertEquals(
        errors[0].message,
        `${
          join(dir, "b.yml")
        }: document 1: kind: Unsupported value: "Job": supported values: "Pod"`,
      );
      assertEquals(errors[1].file, join(dir, "d.yaml"));
      assertEquals(errors[1].document, 1);
    });
  });

  await t.step("a single file path is read whatever its name", async () => {
    await withTempDir(async (dir) => {
      const file = join(dir, "web.manifest");
      await Deno.writeTextFile(file, podYaml("web"));
      const { pods, errors } = await loadPodManifests(file, { nodeName });
      assertEquals(errors, []);
      assertEquals(pods.map((p) => p.metadata.name), ["web-node-a"]);
    });
  });

  await t.step("the same pod in two files", async () => {
    await withTempDir(async (dir) => {
      await Deno.writeTextFile(join(dir, "a.yaml"), podYaml("web"));
      await Deno.writeTextFile(join(dir, "b.yaml"), podYaml("web", ["workingDir: /"]));
      const { pods, errors } = await loadPodManifests(dir, { nodeName });
      assertEquals(pods.length, 1);
      assertEquals(errors.map((e) => e.message), [
        `${
          join(dir, "b.yaml")
        }: document 1: metadata.name: Duplicate value: pod default/web-node-a is already defined in ${
          join(dir, "a.yaml")
        }: document 1`,
      ]);
    });
  });

  await t.step("the same explicit metadata.uid in two files", async () => {
    await withTempDir(async (dir) => {
      await Deno.writeTextFile(
        join(dir, "a.yaml"),
        podYaml("web").replace("  name: web", "  name: web\n  uid: u-1"),
      );
      await Deno.writeTextFile(
        join(dir, "b.yaml"),
        podYaml("db").replace("  name: db", "  name: db\n  uid: u-1"),
      );
      const { pods, errors } = await loadPodManifests(dir, { nodeName });
      assertEquals(pods.map((p) => p.metadata.name), ["web-node-a"]);
      assertEquals(errors.map((e) => e.message), [
        `${
          join(dir, "b.yaml")
        }: document 1: metadata.uid: Duplicate value: uid "u-1" is already used in ${
          join(dir, "a.yaml")
        }: document 1`,
      ]);
    });
  });

  await t.step("a missing path", async () => {
    await withTempDir(async (dir) => {
      const missing = join(dir, "nope");
      const { pods, errors } = await loadPodManifests(missing + "/", { nodeName });
      assertEquals(pods, []);
      assertEquals(errors.map((e) => e.message), [`${missing}: path does not exist`]);
    });
  });
});

Deno.test("TestWatchManifests", async (t) => {
  await t.step(
    "an unreadable path keeps the current pods; a missing one empties the set",
    async () => {
      await withTempDir(async (dir) => {
        const clock = new FakeClock(0);
        const updates: PodUpdate[] = [];
        const pods = join(dir, "pods");
        await Deno.mkdir(pods);
        await Deno.writeTextFile(join(pods, "a.yaml"), podYaml("alpha"));
        const watcher = await watchManifests(pods, {
          nodeName,
          clock,
          watchFs: false,
          onChange: (u) => void updates.push(u),
        });
        const names = () => updates.at(-1)!.pods.map((p) => p.metadata.name);
        try {
          assertEquals(names(), ["alpha-node-a"]);
          // A symlink loop: stat fails with an error other than NotFound (root ignores modes).
          await Deno.remove(pods, { recursive: true });
          await Deno.symlink(pods, pods);
          await watcher.resync();
          assertEquals(names(), ["alpha-node-a"]);
          assertEquals(updates.at(-1)!.errors.length, 1);
          assertMatch(updates.at(-1)!.errors[0].message, new RegExp(`^${pods}: `));
          await Deno.remove(pods);
          await watcher.resync();
          assertEquals(names(), []);
          assertEquals(updates.at(-1)!.errors.map((e) => e.message), [
            `${pods}: path does not exist`,
          ]);
        } finally {
          await watcher.stop();
        }
      });
    },
  );

  await t.step("re-list on the clock picks up add, change and remove", async () => {
    await withTempDir(async (dir) => {
      const clock = new FakeClock(0);
      const updates: PodUpdate[] = [];
      await Deno.writeTextFile(join(dir, "a.yaml"), podYaml("alpha"));
      const watcher = await watchManifests(dir, {
        nodeName,
        clock,
        watchFs: false,
        onChange: (u) => void updates.push(u),
      });
      const names = () => updates.at(-1)!.pods.map((p) => p.metadata.name);
      const next = async () => {
        await clock.step(20_000);
        await watcher.idle();
      };
      try {
        assertEquals(updates.length, 1, "the initial set is delivered by start");
        assertEquals(updates[0].op, "SET");
        assertEquals(names(), ["alpha-node-a"]);

        await next();
        assertEquals(updates.length, 1, "an unchanged listing is not delivered again");

        await Deno.writeTextFile(join(dir, "b.yaml"), podYaml("beta"));
        await clock.step(19_999);
        await watcher.idle();
        assertEquals(updates.length, 1, "nothing before the period is up");
        await clock.step(1);
        await watcher.idle();
        assertEquals(names(), ["alpha-node-a", "beta-node-a"]);

        const alphaUID = updates.at(-1)!.pods[0].metadata.uid;
        await Deno.writeTextFile(join(dir, "a.yaml"), podYaml("alpha", ["workingDir: /tmp"]));
        await next();
        assertEquals(updates.length, 3);
        assertNotEquals(updates.at(-1)!.pods[0].metadata.uid, alphaUID, "changed content, new UID");
        assertEquals(updates.at(-1)!.pods[0].spec.containers[0].workingDir, "/tmp");

        await Deno.writeTextFile(join(dir, "b.yaml"), "kind: Pod\n");
        await next();
        assertEquals(names(), ["alpha-node-a"]);
        assertEquals(updates.at(-1)!.errors.map((e) => e.message), [
          `${join(dir, "b.yaml")}: document 1: apiVersion: Required value`,
          `${join(dir, "b.yaml")}: document 1: metadata.name: Required value`,
          `${join(dir, "b.yaml")}: document 1: spec: Required value`,
        ]);

        await Deno.remove(join(dir, "b.yaml"));
        await Deno.remove(join(dir, "a.yaml"));
        await next();
        assertEquals(updates.at(-1)!.pods, []);
        assertEquals(updates.at(-1)!.errors, []);
        assertEquals(updates.length, 5);
      } finally {
        await watcher.stop();
      }
      assertEquals(clock.pendingTimers(), 0, "stop leaves no timer behind");
    });
  });

  await t.step("a path that appears later", async () => {
    await withTempDir(async (dir) => {
      const clock = new FakeClock(0);
      const updates: PodUpdate[] = [];
      const path = join(dir, "pods");
      const watcher = await watchManifests(path, {
        nodeName,
        clock,
        watchFs: false,
        onChange: (u) => void updates.push(u),
      });
      try {
        assertEquals(updates[0].pods, []);
        assertEquals(updates[0].errors.map((e) => e.detail), ["path does not exist"]);
        await Deno.mkdir(path);
        await Deno.writeTextFile(join(path, "web.yaml"), podYaml("web"));
        await clock.step(20_000);
        await watcher.idle();
        assertEquals(updates.at(-1)!.pods.map((p) => p.metadata.name), ["web-node-a"]);
        assertEquals(updates.at(-1)!.errors, []);
      } finally {
        await watcher.stop();
      }
    });
  });

  await t.step("a throwing onChange does not stop the watch", async () => {
    await withTempDir(async (dir) => {
      const clock = new FakeClock(0);
      const failures: unknown[] = [];
      let calls = 0;
      const watcher = await watchManifests(dir, {
        nodeName,
        clock,
        watchFs: false,
        onChange: () => {
          calls++;
          throw new Error("boom");
        },
        onError: (e) => failures.push(e),
      });
      try {
        await Deno.writeTextFile(join(dir, "web.yaml"), podYaml("web"));
        await clock.step(20_000);
        await watcher.idle();
        assertEquals(calls, 2);
        assertEquals(failures.length, 2);
      } finally {
        await watcher.stop();
      }
    });
  });

  await t.step("file system notifications trigger a re-list before the period", async () => {
    await withTempDir(async (dir) => {
      let notify: (u: PodUpdate) => void = () => {};
      const clock = new FakeClock(0);
      const watcher = await watchManifests(dir, {
        nodeName,
        clock,
        debounceMs: 50,
        onChange: (u) => notify(u),
      });
      try {
        let update: PodUpdate | undefined;
        notify = (u) => update = u;
        await Deno.writeTextFile(join(dir, "web.yaml"), podYaml("web"));
        // The notification arrives asynchronously and arms the debounce timer on the fake clock
        // (next to the periodic re-list timer): wait for that event, then let the debounce expire.
        for (let i = 0; i < 500 && clock.pendingTimers() < 2; i++) await delay(10);
        await clock.step(50);
        await watcher.idle();
        assert(update, "no update after the file system notification");
        assertEquals(update.pods.map((p) => p.metadata.name), ["web-node-a"]);
        assert(clock.now() < 20_000, "picked up before the periodic re-list");
      } finally {
        await watcher.stop();
      }
    });
  });
});
