// The differential suite's comparison (tests/e2e/differential.ts) on fixed objects: masking,
// flattening, event grouping, the status history, and the allow-list's three kinds of entry (any
// difference at a path, a count within a tolerance, equal after a rewrite). Needs nothing running.
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import {
  type AllowEntry,
  compareViews,
  flatten,
  formatDifferences,
  maskString,
  podView,
  statusHistory,
} from "./differential.ts";
import { differentialAllowList } from "./differential_allow_list.ts";

const names = { namespace: "diff-x-k-crash", nodeName: "kubelet-oracle" };

function pod(overrides: Record<string, unknown> = {}) {
  return {
    status: {
      phase: "Running",
      podIP: "10.88.188.4",
      startTime: "2026-11-27T07:12:01Z",
      conditions: [{ type: "Ready", status: "True" }],
      containerStatuses: [{
        name: "app",
        containerID: "containerd://" + "a".repeat(64),
        imageID: "sha256:" + "b".repeat(64),
        ready: true,
        restartCount: 0,
        state: { running: { startedAt: "2026-11-27T07:12:02.5+00:00" } },
      }],
      ...overrides,
    },
  };
}

function event(reason: string, message: string, count = 1) {
  return {
    type: reason === "Unhealthy" ? "Warning" : "Normal",
    reason,
    message,
    count,
    involvedObject: { kind: "Pod", fieldPath: "spec.containers{app}" },
    source: { component: "kubelet", host: names.nodeName },
  };
}

Deno.test("maskString: names, IDs, times and addresses", () => {
  assertEquals(
    maskString(
      "back-off 10s restarting failed container=app pod=p_diff-x-k-crash" +
        "(0e2f7c1a-5b7d-4c1e-9a3b-2f6d8e9a1b2c) on kubelet-oracle at 10.88.99.183 " +
        "2026-11-27T07:12:01.123Z",
      names,
    ),
    "back-off 10s restarting failed container=app pod=p_<ns>(<uid>) on <node> at <ip> <time>",
  );
  // An empty name (a Node has no namespace) masks nothing.
  assertEquals(maskString("abc", { namespace: "", nodeName: "n1" }), "abc");
});

Deno.test("flatten: arrays keyed by name or type, empty values kept", () => {
  const view = flatten(pod({ hostIPs: [] }).status, "status");
  assertEquals(view.get("status.conditions[Ready].status"), '"True"');
  assertEquals(view.get("status.containerStatuses[app].restartCount"), "0");
  assertEquals(view.get("status.hostIPs"), "[]");
});

Deno.test("podView: masked status, grouped events with summed counts, history", () => {
  const view = podView(
    pod(),
    [event("Started", "Container started"), event("Started", "Container started", 2)],
    names,
    [{ phase: "Pending" }, { phase: "Pending" }, pod().status],
  );
  assertEquals(view.get("status.podIP"), '"<ip>"');
  assertEquals(view.get("status.containerStatuses[app].containerID"), '"<container-id>"');
  assertEquals(view.get("status.containerStatuses[app].imageID"), '"<digest>"');
  assertEquals(view.get("status.containerStatuses[app].state.running.startedAt"), '"<time>"');
  const key = "events[Normal Started spec.containers{app}: Container started]";
  assertEquals(view.get(`${key}.count`), "3");
  assertEquals(view.get(`${key}.source`), '"kubelet/<node>"');
  assertEquals(view.get("history"), '"Pending → Running app=running/ready"');
});

Deno.test("statusHistory: one line per distinct step, reasons and readiness shown", () => {
  assertEquals(
    statusHistory([
      { phase: "Pending" },
      {
        phase: "Failed",
        containerStatuses: [{
          name: "app",
          ready: false,
          state: { terminated: { reason: "Error" } },
        }],
      },
    ]),
    "Pending → Failed app=terminated:Error",
  );
});

Deno.test("compareViews: a difference fails unless an entry allows it", () => {
  const kubelet = podView(pod(), [event("Killing", "Stopping container app")], names);
  const probelet = podView(
    pod({ phase: "Failed" }),
    [],
    { namespace: "diff-x-p-crash", nodeName: "probelet-node" },
  );
  const diffs = compareViews(kubelet, probelet, "crash", []);
  assertEquals(diffs.map((d) => d.path), [
    "events[Normal Killing spec.containers{app}: Stopping container app].count",
    "events[Normal Killing spec.containers{app}: Stopping container app].reporting",
    "events[Normal Killing spec.containers{app}: Stopping container app].source",
    "status.phase",
  ]);
  assert(diffs.every((d) => d.allowedBy === undefined));
  assert(formatDifferences("crash", diffs).includes('    - "Running"\n    + "Failed"'));

  const allow: AllowEntry[] = [
    { path: /^events\[Normal Killing /, scenarios: ["crash"], kind: "feature", reason: "r1" },
  ];
  const allowed = compareViews(kubelet, probelet, "crash", allow);
  assertEquals(allowed.filter((d) => !d.allowedBy).map((d) => d.path), ["status.phase"]);
  // The entry names its scenario: elsewhere it allows nothing.
  assert(compareViews(kubelet, probelet, "other", allow).every((d) => !d.allowedBy));
});

Deno.test("compareViews: a count tolerance covers counts only, within the tolerance", () => {
  const tolerance: AllowEntry[] = [
    { path: /Unhealthy/, kind: "timing", countTolerance: 2, reason: "r" },
  ];
  const view = (count: number) =>
    podView(pod(), [event("Unhealthy", "Readiness probe failed: ", count)], names);
  assert(compareViews(view(5), view(3), "s", tolerance).every((d) => d.allowedBy));
  assert(compareViews(view(6), view(3), "s", tolerance).every((d) => !d.allowedBy));
  // An event on one side only: its source differs too, which a count tolerance does not cover.
  const absent = compareViews(view(1), podView(pod(), [], names), "s", tolerance);
  assert(absent.some((d) => d.path.endsWith(".source") && !d.allowedBy));
});

Deno.test("the allow-list's history entries: the known step goes, the rest must match", () => {
  const history = (line: string) => new Map([["history", JSON.stringify(line)]]);
  const kubelet = "Pending → Pending app=waiting:ContainerCreating → Running app=running/ready → " +
    "Running app=terminated:Completed → Succeeded app=terminated:Completed";
  // probelet did not see the container run: it held the phase back as Pending.
  const probelet = "Pending → Pending app=waiting:ContainerCreating → " +
    "Pending app=terminated:Completed → Succeeded app=terminated:Completed";
  const [allowed] = compareViews(history(kubelet), history(probelet), "job", differentialAllowList);
  assert(allowed.allowedBy, "the phase held back before the terminal one is Running or Pending");
  // A node whose status manager missed the window posts the terminal phase directly.
  const [atOnce] = compareViews(
    history(kubelet),
    history("Pending → Pending app=waiting:ContainerCreating → Succeeded app=terminated:Completed"),
    "job",
    differentialAllowList,
  );
  assert(atOnce.allowedBy, "the held step may be missed");
  // A different terminal phase is not.
  const [refused] = compareViews(
    history(kubelet),
    history(probelet.replace("Succeeded app=terminated:Completed", "Failed app=terminated:Error")),
    "job",
    differentialAllowList,
  );
  assertEquals(refused.allowedBy, undefined);
  // A skipped ContainerCreating step is timing; a different last step is not.
  const [skipped] = compareViews(
    history("Pending → Pending app=waiting:ContainerCreating → Running app=running/ready"),
    history("Pending → Running app=running/ready"),
    "readiness-gate",
    differentialAllowList,
  );
  assert(skipped.allowedBy);
  const [lastStep] = compareViews(
    history("Pending → Pending app=waiting:ContainerCreating → Running app=running/ready"),
    history("Pending → Pending app=waiting:ContainerCreating → Running app=running"),
    "readiness-gate",
    differentialAllowList,
  );
  assertEquals(lastStep.allowedBy, undefined);
});

Deno.test("the init-and-sidecar entry: Pending steps and a not-yet-ready Running step may go", () => {
  const history = (line: string) => new Map([["history", JSON.stringify(line)]]);
  const start = "Pending → Pending init=waiting:PodInitializing sidecar=waiting:PodInitializing " +
    "app=waiting:PodInitializing → Pending init=running sidecar=waiting:PodInitializing " +
    "app=waiting:PodInitializing";
  const ready = "Running init=terminated:Completed/ready sidecar=running/ready app=running/ready";
  // As CI saw it on 59b2d61: kubelet posted every step, probelet synced after the init container
  // was done and after the sidecar's readiness probe had passed.
  const kubelet = `${start} → Pending init=terminated:Completed/ready ` +
    "sidecar=waiting:PodInitializing app=waiting:PodInitializing → Pending " +
    "init=terminated:Completed/ready sidecar=running app=waiting:PodInitializing → Running " +
    `init=terminated:Completed/ready sidecar=running app=running/ready → ${ready}`;
  const probelet = `${start} → Pending init=terminated:Completed/ready sidecar=running ` +
    `app=waiting:PodInitializing → ${ready}`;
  const [allowed] = compareViews(
    history(kubelet),
    history(probelet),
    "init-and-sidecar",
    differentialAllowList,
  );
  assert(allowed.allowedBy, "steps a later sync skips are timing");
  // A sidecar that never becomes ready is not.
  const [refused] = compareViews(
    history(kubelet),
    history(probelet.replace("sidecar=running/ready", "sidecar=running")),
    "init-and-sidecar",
    differentialAllowList,
  );
  assertEquals(refused.allowedBy, undefined);
});

Deno.test("the allow-list: every entry has a reason, and feature entries an issue", () => {
  for (const entry of differentialAllowList) {
    assert(entry.reason.length > 10, String(entry.path));
    if (entry.kind === "feature") assert(entry.issue, `${entry.path}: feature without an issue`);
  }
});
