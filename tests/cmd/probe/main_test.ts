/**
 * Tests of `deno task probe`: flag parsing, one-shot probing against real servers on 127.0.0.1, the
 * exit status, and the --watch mode driven by the prober manager on a fake clock.
 */
import {
  deepStrictEqual as assertEquals,
  match as assertMatch,
  ok as assert,
  throws as assertThrows,
} from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Pod } from "../../../src/api/core/v1/mod.ts";
import { parsePodManifest } from "../../../src/kubelet/config/mod.ts";
import { parseProbeCommand } from "../../../src/cmd/probe/main.ts";
import { formatReports, isHealthy, probeOnce } from "../../../src/cmd/probe/probe_once.ts";
import { watchProbes } from "../../../src/cmd/probe/watch.ts";
import { FakeClock, settle } from "../../../src/util/clock.ts";
import { startHealthServer } from "../../testing/grpc_health_server.ts";

async function startHttp(): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    if (req.url === "/ok") res.writeHead(200).end("ok body");
    else if (req.url === "/away") res.writeHead(302, { location: "http://0.0.0.0/x" }).end("moved");
    else res.writeHead(500).end("fail body");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

async function podFrom(yaml: string): Promise<Pod> {
  const { pods, errors } = await parsePodManifest(yaml, { file: "test.yaml", nodeName: "node" });
  assertEquals(errors.map((e) => e.message), []);
  assertEquals(pods.length, 1);
  return pods[0];
}

Deno.test("parseProbeCommand", async (t) => {
  await t.step("defaults", () => {
    const cmd = parseProbeCommand(["pod.yaml"]);
    assertEquals(cmd.manifest, "pod.yaml");
    assertEquals(cmd.podIP, "127.0.0.1");
    assertEquals(cmd.output, "text");
    assertEquals(cmd.watch, false);
    assertEquals(cmd.probeType, undefined);
  });
  await t.step("all flags", () => {
    const cmd = parseProbeCommand([
      "pod.yaml",
      "--container",
      "app",
      "--type",
      "startup",
      "--pod-ip",
      "10.0.0.1",
      "--output",
      "json",
      "--v",
      "4",
    ]);
    assertEquals([cmd.container, cmd.probeType, cmd.podIP, cmd.output, cmd.verbosity], [
      "app",
      "startup",
      "10.0.0.1",
      "json",
      4,
    ]);
  });
  await t.step("bad flags name the flag", () => {
    assertThrows(() => parseProbeCommand(["pod.yaml", "--type", "alive"]), /--type: must be/);
    assertThrows(() => parseProbeCommand(["pod.yaml", "--output", "xml"]), /--output: must be/);
    assertThrows(() => parseProbeCommand(["pod.yaml", "--v", "x"]), /--v: must be/);
    assertThrows(
      () => parseProbeCommand(["pod.yaml", "--bogus"]),
      /^Error: unknown flag: --bogus$/,
    );
    assertThrows(
      () => parseProbeCommand(["pod.yaml", "--pod-ipp", "1"]),
      /^Error: unknown flag: --pod-ipp \(did you mean --pod-ip\?\)$/,
    );
    assertThrows(() => parseProbeCommand([]), /a manifest file is required/);
    assertThrows(() => parseProbeCommand(["a.yaml", "b.yaml"]), /exactly one manifest/);
  });
});

Deno.test("probeOnce runs every handler against real servers", async () => {
  const http = await startHttp();
  const grpc = await startHealthServer({ status: "NOT_SERVING" });
  const tcp = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const pod = await podFrom(`
apiVersion: v1
kind: Pod
metadata: { name: demo }
spec:
  containers:
    - name: app
      image: img
      ports: [{ name: http, containerPort: ${http.port} }]
      env: [{ name: WORD, value: hello }]
      startupProbe: { exec: { command: ["sh", "-c", "echo $(WORD); exit 0"] } }
      readinessProbe: { httpGet: { path: /ok, port: http } }
      livenessProbe: { tcpSocket: { port: ${tcp.addr.port} } }
    - name: side
      image: img
      readinessProbe: { httpGet: { path: /bad, port: ${http.port} } }
      livenessProbe: { grpc: { port: ${grpc.port} } }
      startupProbe: { httpGet: { path: /away, port: ${http.port} } }
`);
    const reports = await probeOnce([pod], { podIP: "127.0.0.1" });
    const byKey = Object.fromEntries(
      reports.map((r) => [`${r.container}/${r.probeType}`, [r.handler, r.result, r.output]]),
    );
    assertEquals(byKey, {
      "app/startup": ["exec", "success", "hello\n"],
      "app/readiness": ["httpGet", "success", "ok body"],
      "app/liveness": ["tcpSocket", "success", ""],
      "side/startup": ["httpGet", "warning", "Probe terminated redirects, Response body: moved"],
      "side/readiness": ["httpGet", "failure", "HTTP probe failed with statuscode: 500"],
      "side/liveness": ["grpc", "failure", 'service unhealthy (responded with "NOT_SERVING")'],
    });
    assertEquals(reports.filter(isHealthy).length, 4);
    assertMatch(formatReports(reports), /side\s+readiness\s+httpGet\s+failure/);

    const onlyLiveness = await probeOnce([pod], {
      podIP: "127.0.0.1",
      container: "app",
      probeType: "liveness",
    });
    assertEquals(onlyLiveness.map((r) => `${r.container}/${r.probeType}`), ["app/liveness"]);
  } finally {
    tcp.close();
    http.server.close();
    await grpc.close();
  }
});

Deno.test("probeOnce reports a named port that does not exist as an error", async () => {
  const pod = await podFrom(`
apiVersion: v1
kind: Pod
metadata: { name: demo }
spec:
  containers:
    - name: app
      image: img
      ports: [{ name: web, containerPort: 8080 }]
      readinessProbe: { tcpSocket: { port: 1 } }
`);
  // A spec that validation would refuse is still handled gracefully when built in code.
  pod.spec.containers[0].readinessProbe = { tcpSocket: { port: "metrics" } };
  const [report] = await probeOnce([pod], { podIP: "127.0.0.1" });
  assertEquals(report.error, "port metrics not found");
  assertEquals(isHealthy(report), false);
});

Deno.test("main exit status follows the probes", async () => {
  const { main } = await import("../../../src/cmd/probe/main.ts");
  const http = await startHttp();
  const dir = await Deno.makeTempDir();
  const original = console.log;
  const originalError = console.error;
  console.log = () => {};
  console.error = () => {};
  try {
    const manifest = (path: string) => `
apiVersion: v1
kind: Pod
metadata: { name: demo }
spec:
  containers:
    - name: app
      image: img
      readinessProbe: { httpGet: { path: ${path}, port: ${http.port} } }
`;
    await Deno.writeTextFile(`${dir}/good.yaml`, manifest("/ok"));
    await Deno.writeTextFile(`${dir}/bad.yaml`, manifest("/nope"));
    await Deno.writeTextFile(`${dir}/broken.yaml`, "kind: Pod\nmetadata: {}\nspec: {}\n");
    assertEquals(await main([`${dir}/good.yaml`]), 0);
    assertEquals(await main([`${dir}/bad.yaml`]), 1);
    assertEquals(await main([`${dir}/broken.yaml`]), 2);
    assertEquals(await main([`${dir}/good.yaml`, "--container", "ghost"]), 2);
    assertEquals(await main(["--type", "x", `${dir}/good.yaml`]), 2);
  } finally {
    console.log = original;
    console.error = originalError;
    http.server.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("watchProbes prints transitions and restarts a container that fails liveness", async () => {
  const http = await startHttp();
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  const lines: string[] = [];
  const ac = new AbortController();
  const pod = await podFrom(`
apiVersion: v1
kind: Pod
metadata: { name: demo }
spec:
  containers:
    - name: app
      image: img
      readinessProbe: { httpGet: { path: /ok, port: ${http.port} }, periodSeconds: 1 }
      livenessProbe: { httpGet: { path: /bad, port: ${http.port} }, periodSeconds: 1, failureThreshold: 2 }
`);
  const done = watchProbes([pod], {
    podIP: "127.0.0.1",
    signal: ac.signal,
    print: (l) => lines.push(l),
    clock,
  });
  // Real sockets answer in real time: step the fake clock one period at a time until the restart shows.
  const seen = (re: RegExp) => lines.some((l) => re.test(l));
  try {
    for (let i = 0; i < 200 && !seen(/restart .* app: Container app failed liveness probe/); i++) {
      await clock.step(i % 20 === 0 ? 1000 : 0);
      await settle();
    }
    assert(seen(/Readiness\s+default\/demo-node app: Success/), lines.join("\n"));
    assert(
      seen(
        /event .*Warning Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500/,
      ),
      lines.join("\n"),
    );
    assert(
      seen(/restart .* app: Container app failed liveness probe, will be restarted/),
      lines.join("\n"),
    );
  } finally {
    ac.abort();
    await done;
    http.server.close();
  }
});

Deno.test("main shows the prober's klog info lines only when --v is given", async () => {
  const { dropInfoLines } = await import("../../../src/cmd/probe/main.ts");
  const lines: string[] = [];
  const sink = dropInfoLines((line) => lines.push(line));
  sink('I1127 07:06:42.225756   15454 prober_manager.ts:282] "Failed to trigger a manual run"');
  sink('W1127 07:06:42.225756   15454 worker.ts:1] "Probe target gone"');
  sink('E1127 07:06:42.225756   15454 worker.ts:1] "Probe errored"');
  assertEquals(lines.map((l) => l[0]), ["W", "E"]);
  assertEquals(parseProbeCommand(["pod.yaml"]).verbosityGiven, false);
  assertEquals(parseProbeCommand(["pod.yaml", "--v", "0"]).verbosityGiven, true);
});
