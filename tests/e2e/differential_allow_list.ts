/**
 * The differences between probelet and kubelet v1.36.3 that the differential suite
 * (tests/e2e/differential_test.ts) lets pass, each with its reason: a feature not built yet (with
 * the issue that tracks it) or a timing tolerance. Paths are those of tests/e2e/differential.ts
 * (`status.…` of the pod, `events[<type> <reason> <fieldPath>: <message>].count|source`). An entry
 * that stops matching anything is printed by the suite, so it can go once the feature lands.
 * @module
 */
import type { AllowEntry } from "./differential.ts";

/**
 * A status history without the steps a node may skip when it syncs a moment later (each sync
 * posts one status): a step with a container running but not yet ready, or with the containers
 * being created, followed by another step.
 */
function withoutTransientSteps(history: string): string {
  return history
    .replace(/ → [A-Z][a-z]+(?: [^\s→]+)*? [^\s→]+=running(?= |$)(?: [^\s→]+)*?(?= → )/g, "")
    .replace(/ → Pending(?: [^\s→]+=waiting:ContainerCreating)+(?= → )/g, "");
}

/**
 * A status history without the step that shows the containers terminated under a non-terminal
 * phase (the phase held back) right before the terminal phase with the same containers.
 */
function withoutHeldPhase(history: string): string {
  return history.replace(
    / → (?:Running|Pending)((?: \S+=terminated:\S+)+)(?= → (?:Succeeded|Failed)\1(?: → |$))/g,
    "",
  );
}

/** Scenarios whose containers run to completion at once. */
const runToCompletion = [
  "never-fails",
  "never-succeeds",
  "onfailure-fails-once",
  "job",
  "termination-message-file",
  "termination-message-fallback-to-logs",
  "env",
  "security-context",
  "volumes",
  "poststart-hook-fails",
  "dns-hosts-hostname",
  "downward-api-volume",
  "stdin-tty",
];

/** Every allowed difference; the suite fails on any other. */
export const differentialAllowList: AllowEntry[] = [
  {
    path: /^status\.((init)?[cC]ontainerStatuses\[[^\]]+\]\.)?(resources|allocatedResources)\b/,
    kind: "timing",
    issue: 20,
    reason: "the pod-level resources are the pod cgroup's view (cgroup v1's unlimited memory " +
      "limit) in a status generated while the API's copy of the pod says Running, else the " +
      "spec's ({} here): whether a node's last status before the read was generated before or " +
      "after the API showed Running (or, at the end, Succeeded/Failed) depends on when it synced " +
      "and when its watch delivered the pod; kubelet does the same (convertToAPIPodLevelResourcesStatus)",
  },
  {
    path: /^events\[Warning Unhealthy spec\.containers\{app\}: Startup probe failed: /,
    scenarios: ["startup-gates-liveness"],
    kind: "timing",
    reason:
      "how many startup probes fail (0-3) before the container's file appears 3 s after its " +
      "start depends on when each node's first probe ran",
  },
  {
    path: /^events\[Warning Unhealthy spec\.containers\{app\}: Readiness probe failed: \]\.count$/,
    scenarios: ["readiness-failing"],
    kind: "timing",
    countTolerance: 6,
    reason:
      "a failing readiness probe records one event a second; each node is read at its own moment",
  },
  {
    path:
      /^(status\.containerStatuses\[app\]\.(state|lastState|ready|started)\b|status\.conditions\[(Ready|ContainersReady)\]\.(status|reason|message)$|events\[Warning BackOff )/,
    scenarios: ["crash-loop"],
    kind: "timing",
    issue: 20,
    reason: "read when the second restart shows: kubelet shows terminated(Error) for most of the " +
      "back-off (waiting only just before the restart, up to 50 % late), probelet waiting at once",
  },
  {
    path: /^events\[Warning Unhealthy [^\]]*(context deadline exceeded|timed out)/,
    kind: "timing",
    reason: "on a busy machine a probe may time out on one node and not the other",
  },
  {
    path: /^history$/,
    scenarios: runToCompletion,
    kind: "timing",
    issue: 20,
    reason: "a container that exits at once may or may not be seen running by either node; " +
      "both hold the terminal phase back until their pod worker has stopped the pod (the held " +
      "phase is Running if the node saw the container run, else Pending), but a node whose " +
      "status manager did not send a status in that window (from the sync that found the pod " +
      "terminal to the end of SyncTerminatingPod: the next relist, up to 1 s, and the kill) " +
      "posts the terminal phase directly, which a loaded machine sees on either node",
    equalAfter: (history) =>
      withoutHeldPhase(
        withoutTransientSteps(history).replace(/ → Running( \S+=running\S*)+(?= → )/g, ""),
      ),
  },
  {
    path: /^history$/,
    scenarios: ["crash-loop"],
    kind: "timing",
    issue: 20,
    reason:
      "the crash loop's steps depend on when each node saw the short-lived container and on " +
      "kubelet showing terminated(Error) during the back-off",
  },
  {
    path: /^status\.declaredFeatures\b/,
    scenarios: ["node"],
    kind: "feature",
    issue: 20,
    reason: "kubelet v1.36 declares the node features it honours (NodeDeclaredFeatures, beta " +
      "on): ExtendWebSocketsToKubelet, InPlacePodLevelResourcesVerticalScaling, " +
      "InPlacePodVerticalScalingInitContainers, RestartAllContainersOnContainerExits; probelet " +
      "honours none of them (its streaming server refuses WebSocket, it resizes nothing in " +
      "place, restartPolicyRules are refused), so it declares none",
  },
  {
    path: /^history$/,
    scenarios: ["init-and-sidecar"],
    kind: "timing",
    issue: 20,
    reason:
      "which Pending steps after the init container started (it running, it done, the sidecar " +
      "started) each node posts depends on when it synced, and so does a Running step with the " +
      "sidecar not yet ready; the steps before and the last step must match",
    equalAfter: (history) =>
      withoutTransientSteps(
        history.replace(/ → Pending[^→]*=(running|terminated)[^→]*(?= → )/g, ""),
      ),
  },
  {
    path: /^history$/,
    kind: "timing",
    reason: "a step with a container running but not yet ready, or being created, may be skipped " +
      "by a node that syncs a moment later (each sync posts one status)",
    equalAfter: withoutTransientSteps,
  },
  {
    path: /^history$/,
    scenarios: ["onfailure-fails-once"],
    kind: "timing",
    reason: "which steps of the restart (running, terminated:Error, the 10 s back-off) each node " +
      "posts depends on when it synced; the steps up to the start and the terminal one must match",
    equalAfter: (history) =>
      history.replace(/(ContainerCreating)(?: → [^→]+)*?(?= → (?:Succeeded|Failed) [^→]+$)/, "$1"),
  },
  {
    path:
      /^events\[Normal DeadlineExceeded : Pod was active on the node longer than the specified deadline\]\.count$/,
    scenarios: ["active-deadline"],
    kind: "timing",
    countTolerance: 2,
    reason: "each status a node generates past the deadline records the event again (kubelet: " +
      "SyncPod, SyncTerminatingPod's first and last status, SyncTerminatedPod); how many came " +
      "before the read depends on when each node synced",
  },
  {
    path: /^history$/,
    scenarios: ["active-deadline"],
    kind: "timing",
    issue: 20,
    reason: "while the container is being killed both hold back the phase they had (Pending or " +
      "Running); which steps each posts before Failed depends on when it synced, and a node " +
      "whose status manager was sending a status generated before the kill when the kill ended " +
      "posts Failed with the container still running, then terminated",
    equalAfter: (history) => history.replace(/^(\S+)(?: → [^→]+)*?( → Failed [^→]+)$/, "$1$2"),
  },
  {
    path: /^events\[Warning (ErrImageNeverPull|Failed) spec\.containers\{app\}: .*\]\.count$/,
    scenarios: ["image-never-pull-missing"],
    kind: "timing",
    countTolerance: 3,
    reason:
      "every sync of the waiting pod records the events again; each node is read at its own " +
      "moment",
  },
];
