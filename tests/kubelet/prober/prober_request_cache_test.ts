/**
 * The prober keeps a built HTTP request while the action, container and pod IP stay the same
 * objects/values (kubelet rebuilds it on every probe; the result is the same).
 * @module
 */
import assert from "node:assert/strict";
import type { Container, Pod } from "../../../src/api/core/v1/mod.ts";
import { FakeRecorder } from "../../../src/kubelet/events/mod.ts";
import { newProber } from "../../../src/kubelet/prober/prober.ts";
import type { ProbeRequest } from "../../../src/probe/http/request.ts";
import { ProbeBudget } from "../../../src/probe/budget.ts";

Deno.test("TestProberReusesHTTPRequestWhileInputsAreTheSame", async () => {
  const prober = newProber(undefined, new FakeRecorder(), { budget: new ProbeBudget(10) });
  const seen: ProbeRequest[] = [];
  prober.http = {
    probe(request) {
      seen.push(request);
      return Promise.resolve({ result: "success", output: "" });
    },
  };
  const container: Container = {
    name: "c",
    ports: [{ name: "web", containerPort: 8080 }],
    readinessProbe: { httpGet: { path: "/healthz", port: "web" } },
  };
  const pod: Pod = {
    metadata: { name: "p", namespace: "default", uid: "u" },
    spec: { containers: [container] },
  };
  const target = (podIP: string) => ({
    pod,
    status: { podIP },
    container,
    containerID: { type: "test", id: "1" },
  });
  await prober.probe("readiness", target("10.0.0.1"));
  await prober.probe("readiness", target("10.0.0.1"));
  await prober.probe("readiness", target("10.0.0.2"));
  assert.equal(seen[0], seen[1]);
  assert.notEqual(seen[1], seen[2]);
  assert.equal(seen[0].url.toString(), "http://10.0.0.1:8080/healthz");
  assert.equal(seen[2].url.toString(), "http://10.0.0.2:8080/healthz");
  // Another container object (a changed spec) builds anew.
  const changed = { ...container, ports: [{ name: "web", containerPort: 9090 }] };
  await prober.probe("readiness", { ...target("10.0.0.2"), container: changed });
  assert.equal(seen[3].url.toString(), "http://10.0.0.2:9090/healthz");
});
