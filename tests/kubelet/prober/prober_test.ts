import assert from "node:assert/strict";
import type { Container, EnvVar, Pod, Probe } from "../../../src/api/core/v1/mod.ts";
import type { CommandRunner, ContainerID } from "../../../src/kubelet/container/mod.ts";
import {
  expandContainerCommandOnlyStatic,
  generateContainerRef,
  getPodReference,
} from "../../../src/kubelet/container/mod.ts";
import { EventType, FakeRecorder } from "../../../src/kubelet/events/mod.ts";
import {
  newProber,
  Prober,
  type ProbeType,
  probeTypeString,
  Result,
} from "../../../src/kubelet/prober/mod.ts";
import {
  BufferWriter,
  type ExecProber,
  LimitWriter,
  newExecProber,
} from "../../../src/probe/exec/exec.ts";
import { HostCommandRunner } from "../../../src/probe/exec/host_runner.ts";
import type { HttpProber } from "../../../src/probe/http/http.ts";
import type { TcpProber } from "../../../src/probe/tcp/tcp.ts";
import type { GrpcProber } from "../../../src/probe/grpc/grpc.ts";
import type { ProbeOutcome, ProbeResult } from "../../../src/probe/probe.ts";
import { fakeExecProber } from "./common.ts";

const outcome = (result: ProbeResult | string, error?: Error): Promise<ProbeOutcome> =>
  Promise.resolve({ result: result as ProbeResult, output: "", error });

const fakeHTTPProber = (result: string, error?: Error): HttpProber => ({
  probe: () => outcome(result, error),
});
const fakeTCPProber = (result: string, error?: Error): TcpProber => ({
  probe: () => outcome(result, error),
});
const fakeGRPCProber = (result: string, error?: Error): GrpcProber => ({
  probe: () => outcome(result, error),
});

// kubelet's containertest.FakeContainerCommandRunner: records what it ran, answers stdout or an
// error that carries stdout (as a runner's failed command does).
class FakeContainerCommandRunner implements CommandRunner {
  cmd: string[] | undefined;
  containerID: ContainerID | undefined;
  constructor(readonly stdout = "", readonly err?: Error) {}
  runInContainer(id: ContainerID, cmd: string[]): Promise<Uint8Array> {
    this.cmd = cmd;
    this.containerID = id;
    const data = new TextEncoder().encode(this.stdout);
    if (this.err) return Promise.reject(Object.assign(this.err, { output: data }));
    return Promise.resolve(data);
  }
}

function newTestProber(): Prober {
  return new Prober({
    exec: fakeExecProber("success"),
    http: fakeHTTPProber("success"),
    tcp: fakeTCPProber("success"),
    grpc: fakeGRPCProber("success"),
    recorder: new FakeRecorder(),
  });
}

Deno.test("TestProbe", async (t) => {
  const containerID: ContainerID = { type: "test", id: "foobar" };
  const execProbe: Probe = { exec: {} };
  const httpProbe: Probe = { httpGet: { path: "/healthz", port: 8080 } };
  const grpcProbe: Probe = { grpc: { port: 8081, service: "" } };
  const tcpProbe: Probe = { tcpSocket: { port: 8082 } };

  const tests: {
    name: string;
    probe?: Probe;
    env?: EnvVar[];
    scheme: "" | "exec" | "http" | "tcp" | "grpc";
    execError?: boolean;
    expectError?: boolean;
    execResult?: string;
    expectedResult: Result;
    expectCommand?: string[];
    unsupported?: boolean;
  }[] = [
    { name: "no probe", scheme: "", expectedResult: Result.Success },
    {
      name: "no handler",
      probe: {},
      scheme: "",
      expectError: true,
      expectedResult: Result.Failure,
    },
    {
      name: "probe fails",
      probe: execProbe,
      scheme: "exec",
      execResult: "failure",
      expectedResult: Result.Failure,
    },
    {
      name: "probe succeeds",
      probe: execProbe,
      scheme: "exec",
      execResult: "success",
      expectedResult: Result.Success,
    },
    {
      name: "probe result is warning",
      probe: execProbe,
      scheme: "exec",
      execResult: "warning",
      expectedResult: Result.Success,
    },
    {
      name: "probe result is unknown with no error",
      probe: execProbe,
      scheme: "exec",
      execResult: "unknown",
      expectedResult: Result.Failure,
    },
    {
      name: "probe result is unknown with an error",
      probe: execProbe,
      scheme: "exec",
      execError: true,
      expectError: true,
      execResult: "unknown",
      expectedResult: Result.Failure,
    },
    {
      name: "unsupported probe type",
      scheme: "",
      expectedResult: Result.Failure,
      expectError: true,
      unsupported: true,
    },
    {
      name: "probe arguments are passed through",
      probe: { exec: { command: ["/bin/bash", "-c", "some script"] } },
      scheme: "exec",
      expectCommand: ["/bin/bash", "-c", "some script"],
      execResult: "success",
      expectedResult: Result.Success,
    },
    {
      name: "probe arguments are expanded from the container env",
      probe: { exec: { command: ["/bin/bash", "-c", "some $(A) $(B)"] } },
      scheme: "exec",
      env: [{ name: "A", value: "script" }],
      expectCommand: ["/bin/bash", "-c", "some script $(B)"],
      execResult: "success",
      expectedResult: Result.Success,
    },
    {
      name: "probe result is unsupported custom value",
      probe: execProbe,
      scheme: "exec",
      execResult: "CustomUnsupportedResult",
      expectedResult: Result.Failure,
    },
    {
      name: "HTTP probe succeeds",
      probe: httpProbe,
      scheme: "http",
      execResult: "success",
      expectedResult: Result.Success,
    },
    {
      name: "HTTP probe fails",
      probe: httpProbe,
      scheme: "http",
      execResult: "failure",
      expectedResult: Result.Failure,
    },
    {
      name: "HTTP probe warning",
      probe: httpProbe,
      scheme: "http",
      execResult: "warning",
      expectedResult: Result.Success,
    },
    {
      name: "HTTP probe unknown",
      probe: httpProbe,
      scheme: "http",
      execResult: "unknown",
      expectedResult: Result.Failure,
    },
    {
      name: "HTTP probe request generation fail",
      probe: { httpGet: { path: "/healthz", port: "abc" } },
      scheme: "http",
      execResult: "unknown",
      expectError: true,
      expectedResult: Result.Failure,
    },
    {
      name: "TCP probe succeeds",
      probe: tcpProbe,
      scheme: "tcp",
      execResult: "success",
      expectedResult: Result.Success,
    },
    {
      name: "TCP probe fails",
      probe: tcpProbe,
      scheme: "tcp",
      execResult: "failure",
      expectedResult: Result.Failure,
    },
    {
      name: "TCP probe warning",
      probe: tcpProbe,
      scheme: "tcp",
      execResult: "warning",
      expectedResult: Result.Success,
    },
    {
      name: "TCP probe unknown",
      probe: tcpProbe,
      scheme: "tcp",
      execResult: "unknown",
      expectedResult: Result.Failure,
    },
    {
      name: "TCP probe resolution malformed",
      probe: { tcpSocket: { port: "abc" } },
      scheme: "tcp",
      execResult: "unknown",
      expectError: true,
      expectedResult: Result.Failure,
    },
    {
      name: "GRPC probe succeeds",
      probe: grpcProbe,
      scheme: "grpc",
      execResult: "success",
      expectedResult: Result.Success,
    },
    {
      name: "GRPC probe fails",
      probe: grpcProbe,
      scheme: "grpc",
      execResult: "failure",
      expectedResult: Result.Failure,
    },
    {
      name: "GRPC probe warning",
      probe: grpcProbe,
      scheme: "grpc",
      execResult: "warning",
      expectedResult: Result.Success,
    },
    {
      name: "GRPC probe unknown",
      probe: grpcProbe,
      scheme: "grpc",
      execResult: "unknown",
      expectedResult: Result.Failure,
    },
  ];

  for (const [i, test] of tests.entries()) {
    for (let pType of ["liveness", "readiness", "startup"] as ProbeType[]) {
      if (test.unsupported) pType = "bogus" as ProbeType;
      await t.step(`${i}-${probeTypeString(pType)} ${test.name}`, async () => {
        const prober = newTestProber();
        const testContainer: Container = { name: "", env: test.env };
        if (pType === "liveness") testContainer.livenessProbe = test.probe;
        if (pType === "readiness") testContainer.readinessProbe = test.probe;
        if (pType === "startup") testContainer.startupProbe = test.probe;
        const result = test.execResult ?? "unknown";
        const err = (kind: string) => test.execError ? new Error(`${kind} error`) : undefined;
        switch (test.scheme) {
          case "http":
            prober.http = fakeHTTPProber(result, err("http"));
            break;
          case "grpc":
            prober.grpc = fakeGRPCProber(result, err("grpc"));
            break;
          case "tcp":
            prober.tcp = fakeTCPProber(result, err("tcp"));
            break;
          default:
            prober.exec = fakeExecProber(result, err("exec"));
        }

        const target = {
          pod: { metadata: {}, spec: { containers: [] } } as Pod,
          status: {},
          container: testContainer,
          containerID,
        };
        const got = await prober.probe(pType, target);
        if (test.expectError) {
          assert.ok(got.error, "Expected probe error but no error was returned.");
        } else assert.equal(got.error, undefined, "Didn't expect probe error");
        assert.equal(got.result, test.expectedResult);

        if (test.expectCommand) {
          prober.exec = newExecProber();
          const runner = new FakeContainerCommandRunner();
          prober.runner = runner;
          const again = await prober.probe(pType, target);
          assert.equal(again.error, undefined, "Didn't expect probe error");
          assert.deepEqual(runner.cmd, test.expectCommand, "unexpected probe arguments");
          assert.deepEqual(runner.containerID, containerID);
        }
      });
      if (test.unsupported) break;
    }
  }
});

Deno.test("TestProbeErrorTexts (prober.go: unknown type and missing handler)", async () => {
  const prober = newTestProber();
  const pod: Pod = {
    metadata: { name: "web", namespace: "default", uid: "u1" },
    spec: { containers: [] },
  };
  const target = {
    pod,
    status: {},
    container: { name: "app", readinessProbe: {} },
    containerID: { type: "", id: "" },
  };
  const missing = await prober.probe("readiness", target);
  assert.equal(missing.error?.message, "missing probe handler for web_default(u1):app");
  const empty = await prober.probe("readiness", {
    ...target,
    pod: { metadata: {}, spec: { containers: [] } },
    container: { name: "", readinessProbe: {} },
  });
  assert.equal(empty.error?.message, "missing probe handler for _():");
  const unknown = await prober.probe("bogus" as ProbeType, target);
  assert.equal(unknown.error?.message, 'unknown probe type: "UNKNOWN"');
});

Deno.test("TestProbeEventsAndRetries (prober.go: events, runProbeWithRetries)", async (t) => {
  const pod: Pod = {
    metadata: { name: "web", namespace: "default", uid: "u1" },
    spec: { containers: [{ name: "app" }] },
  };
  const make = (probe: ExecProber) => {
    const recorder = new FakeRecorder();
    const prober = new Prober({
      exec: probe,
      http: fakeHTTPProber("success"),
      tcp: fakeTCPProber("success"),
      grpc: fakeGRPCProber("success"),
      recorder,
    });
    const container: Container = { name: "app", livenessProbe: { exec: { command: ["true"] } } };
    return {
      prober,
      recorder,
      target: { pod, status: {}, container, containerID: { type: "t", id: "1" } },
    };
  };

  await t.step("an error is retried three times, then one Unhealthy event", async () => {
    let calls = 0;
    const { prober, recorder, target } = make({
      probe: () => (calls++, outcome("unknown", new Error("port abc not found"))),
    });
    const got = await prober.probe("liveness", target);
    assert.equal(calls, 3);
    assert.equal(got.result, Result.Failure);
    assert.deepEqual(recorder.events, [
      "Warning Unhealthy Liveness probe errored and resulted in unknown state: port abc not found",
    ]);
    assert.equal(recorder.refs[0].fieldPath, "spec.containers{app}");
  });

  await t.step("an error then a verdict: the verdict counts", async () => {
    let calls = 0;
    const { prober, recorder, target } = make({
      probe: () => (++calls < 3 ? outcome("unknown", new Error("flaky")) : outcome("success")),
    });
    const got = await prober.probe("liveness", target);
    assert.equal(calls, 3);
    assert.deepEqual(got, { result: Result.Success });
    assert.deepEqual(recorder.events, []);
  });

  await t.step("a failure is not retried and is recorded with its output", async () => {
    let calls = 0;
    const { prober, recorder, target } = make({
      probe:
        () => (calls++,
          Promise.resolve({ result: "failure", output: "HTTP probe failed with statuscode: 500" })),
    });
    const got = await prober.probe("liveness", target);
    assert.equal(calls, 1);
    assert.deepEqual(got, { result: Result.Failure });
    assert.deepEqual(recorder.events, [
      "Warning Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500",
    ]);
  });

  await t.step("a warning is a success with a ProbeWarning event", async () => {
    const { prober, recorder, target } = make({
      probe: () =>
        Promise.resolve({
          result: "warning",
          output: "Probe terminated redirects, Response body: ok",
        }),
    });
    assert.deepEqual(await prober.probe("liveness", target), { result: Result.Success });
    assert.deepEqual(recorder.events, [
      "Warning ProbeWarning Liveness probe warning: Probe terminated redirects, Response body: ok",
    ]);
  });

  await t.step("unknown without error: Failure and no event", async () => {
    const { prober, recorder, target } = make({ probe: () => outcome("unknown") });
    assert.deepEqual(await prober.probe("liveness", target), { result: Result.Failure });
    assert.deepEqual(recorder.events, []);
  });
});

Deno.test("TestNewExecInContainer", async (t) => {
  const limit = 1024;
  const tenKilobyte = "logs-123".repeat(128 * 10);
  const tests = [
    { name: "no error", stdout: "foo", expected: "foo", err: undefined },
    {
      name: "no error (truncated)",
      stdout: tenKilobyte,
      expected: tenKilobyte.slice(0, limit),
      err: undefined,
    },
    {
      name: "error - make sure we get output",
      stdout: "foo",
      expected: "foo",
      err: new Error("bad"),
    },
  ];
  for (const test of tests) {
    await t.step(test.name, async () => {
      const runner = new FakeContainerCommandRunner(test.stdout, test.err);
      const prober = newTestProber();
      prober.runner = runner;
      const containerID: ContainerID = { type: "docker", id: "containerID" };
      const cmd = ["/foo", "bar"];
      const exec = prober.newExecInContainer(containerID, cmd, {
        container: { name: "" },
        timeoutMs: 0,
      });

      const dataBuffer = new BufferWriter();
      const writer = new LimitWriter(dataBuffer, limit);
      exec.setStderr(writer);
      exec.setStdout(writer);
      let err: unknown;
      try {
        await exec.start();
        await exec.wait();
      } catch (e) {
        err = e;
      }

      assert.deepEqual(runner.containerID, containerID, "container id");
      assert.deepEqual(runner.cmd, cmd, "cmd");
      assert.equal(dataBuffer.string(), test.expected, "output");
      assert.equal(String(err), String(test.err), "error");
      if (test.err) assert.equal(err, test.err, "the run error is returned unchanged");
    });
  }
});

Deno.test("TestNewProber", () => {
  const runner = new FakeContainerCommandRunner();
  const recorder = new FakeRecorder();
  const prober = newProber(runner, recorder);
  assert.ok(prober, "Expected prober to be non-nil");
  assert.equal(prober.runner, runner, "Expected prober runner to match");
  assert.equal(prober.recorder, recorder, "Expected prober recorder to match");
  assert.equal(typeof prober.exec.probe, "function", "exec probe initialized");
  assert.equal(typeof prober.http.probe, "function", "http probe initialized");
  assert.equal(typeof prober.tcp.probe, "function", "tcp probe initialized");
  assert.equal(typeof prober.grpc.probe, "function", "grpc probe initialized");
});

Deno.test("TestRecordContainerEventUnknownStatus", async (t) => {
  const pod: Pod = {
    metadata: { uid: "test-probe-pod" },
    spec: { containers: [{ name: "test-probe-container" }] },
  };
  const container = pod.spec.containers[0];
  const output = "probe output";
  for (const probeType of ["readiness", "liveness", "startup"] as const) {
    const name = probeTypeString(probeType);
    await t.step(`${name} Probe Unknown`, () => {
      const recorder = new FakeRecorder();
      const pb = newTestProber();
      pb.recorder = recorder;
      const result: ProbeResult = "unknown";
      pb.recordContainerEvent(pod, container, {
        type: EventType.Warning,
        reason: "ContainerProbeWarning",
        message: `${name} probe warning: ${output}`,
      });
      pb.recordContainerEvent(pod, container, {
        type: EventType.Warning,
        reason: "ContainerProbeWarning",
        message: `Unknown ${name} probe status: ${result}`,
      });
      assert.deepEqual(recorder.events, [
        `Warning ContainerProbeWarning ${name} probe warning: probe output`,
        `Warning ContainerProbeWarning Unknown ${name} probe status: unknown`,
      ]);
    });
  }
});

Deno.test("TestExpandContainerCommandOnlyStatic (container/helpers.go)", () => {
  const env: EnvVar[] = [
    { name: "A", value: "script" },
    { name: "FROM", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
  ];
  const expand = (s: string) => expandContainerCommandOnlyStatic([s], env)[0];
  assert.equal(expand("some $(A) $(B)"), "some script $(B)");
  assert.equal(expand("$$(A) costs $$5"), "$(A) costs $5");
  assert.equal(expand("from=$(FROM)"), "from=", "valueFrom vars expand to their empty value");
  assert.equal(expand("open $(A"), "open $(A", "unterminated reference stays verbatim");
  assert.equal(expand("$A and $"), "$A and $");
  assert.equal(expand("$()"), "$()");
});

Deno.test("TestGenerateContainerRef (container/ref.go)", () => {
  const pod: Pod = {
    metadata: { name: "web", namespace: "default", uid: "u1" },
    spec: { containers: [{ name: "app" }, { name: "" }], initContainers: [{ name: "init" }] },
  };
  assert.deepEqual(generateContainerRef(pod, pod.spec.containers[0]), {
    kind: "Pod",
    apiVersion: "v1",
    name: "web",
    namespace: "default",
    uid: "u1",
    fieldPath: "spec.containers{app}",
  });
  // A pod read from the API server: the reference pins its resourceVersion (GetPartialReference).
  const served: Pod = { ...pod, metadata: { ...pod.metadata, resourceVersion: "42" } };
  assert.equal(generateContainerRef(served, served.spec.containers[0]).resourceVersion, "42");
  assert.equal(getPodReference(served).resourceVersion, "42");
  assert.equal(generateContainerRef(pod, { name: "" }).fieldPath, "spec.containers[1]");
  assert.equal(generateContainerRef(pod, { name: "init" }).fieldPath, "spec.initContainers{init}");
  assert.equal(
    generateContainerRef(pod, { name: "ghost" }).fieldPath,
    "implicitly required container ghost",
  );
});

Deno.test("TestProbeWithRealHandlers (prober.go runProbe, end to end on 127.0.0.1)", async (t) => {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) => new Response("body", { status: new URL(req.url).pathname === "/ok" ? 200 : 500 }),
  );
  const port = server.addr.port;
  const recorder = new FakeRecorder();
  const prober = newProber(new HostCommandRunner(), recorder);
  const pod: Pod = {
    metadata: { name: "web", namespace: "default", uid: "u1" },
    spec: { containers: [{ name: "app" }] },
  };
  const probe = (readinessProbe: Probe) =>
    prober.probe("readiness", {
      pod,
      status: { podIP: "127.0.0.1" },
      container: { name: "app", readinessProbe, env: [{ name: "WORD", value: "hi" }] },
      containerID: { type: "host", id: "app" },
    });
  try {
    await t.step("HTTP 200 → Success", async () => {
      assert.deepEqual(await probe({ httpGet: { path: "/ok", port }, timeoutSeconds: 1 }), {
        result: Result.Success,
      });
    });
    await t.step("HTTP 500 → Failure with kubelet's event", async () => {
      const got = await probe({ httpGet: { path: "/fail", port }, timeoutSeconds: 1 });
      assert.deepEqual(got, { result: Result.Failure });
      assert.equal(
        recorder.events.at(-1),
        "Warning Unhealthy Readiness probe failed: HTTP probe failed with statuscode: 500",
      );
    });
    await t.step("TCP to the listening port → Success", async () => {
      assert.deepEqual(await probe({ tcpSocket: { port }, timeoutSeconds: 1 }), {
        result: Result.Success,
      });
    });
    await t.step("exec with $(VAR) expansion, exit 1 → Failure with its output", async () => {
      const got = await probe({
        exec: { command: ["/bin/sh", "-c", "echo $(WORD); exit 1"] },
        timeoutSeconds: 1,
      });
      assert.deepEqual(got, { result: Result.Failure });
      assert.equal(recorder.events.at(-1), "Warning Unhealthy Readiness probe failed: hi\n");
    });
    await t.step("exec exit 0 → Success", async () => {
      assert.deepEqual(await probe({ exec: { command: ["true"] }, timeoutSeconds: 1 }), {
        result: Result.Success,
      });
    });
  } finally {
    await server.shutdown();
  }
});

Deno.test("TestProbeErrorsOnUndeclaredNamedPort", async (t) => {
  // A static pod whose probe names a port the container does not declare runs (the manifest is
  // accepted); kubelet's findPortByName then fails each probe: "port <name> not found", an
  // Unhealthy event, and a Failure (issue 21 row 13).
  const pod: Pod = {
    metadata: { name: "web", namespace: "default", uid: "u1" },
    spec: { containers: [{ name: "app" }] },
  };
  const cases: { name: string; probe: Probe; event: string }[] = [
    {
      name: "httpGet",
      probe: { httpGet: { path: "/", port: "http" } },
      event:
        "Warning Unhealthy Readiness probe errored and resulted in unknown state: port http not found",
    },
    {
      name: "tcpSocket",
      probe: { tcpSocket: { port: "admin" } },
      event:
        "Warning Unhealthy Readiness probe errored and resulted in unknown state: port admin not found",
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const recorder = new FakeRecorder();
      let sent = 0;
      const prober = new Prober({
        exec: fakeExecProber("success"),
        http: { probe: () => (sent++, outcome("success")) },
        tcp: { probe: () => (sent++, outcome("success")) },
        grpc: fakeGRPCProber("success"),
        recorder,
      });
      const container: Container = {
        name: "app",
        ports: [{ name: "web", containerPort: 8080 }],
        readinessProbe: c.probe,
      };
      const got = await prober.probe("readiness", {
        pod,
        status: { podIP: "127.0.0.1" },
        container,
        containerID: { type: "t", id: "1" },
      });
      assert.equal(got.result, Result.Failure);
      assert.equal(got.error?.message, c.event.split("state: ")[1]);
      assert.equal(sent, 0, "nothing is probed");
      assert.deepEqual(recorder.events, [c.event]);
    });
  }
});
