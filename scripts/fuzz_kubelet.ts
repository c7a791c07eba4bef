/**
 * `deno task fuzz:kubelet`: a longer differential run of probelet's HTTP and gRPC handlers against
 * kubelet v1.36.3's own (tests/testing/differential/).
 * @module
 */
import { parseArgs } from "node:util";
import {
  findKubeletHandlers,
  KubeletHandlers,
} from "../tests/testing/differential/kubelet_handlers.ts";
import {
  classify,
  formatReport,
  type Kind,
  runDifferential,
} from "../tests/testing/differential/run.ts";
import { generateHttp1Cases } from "../tests/testing/differential/http1_cases.ts";
import { generateGrpcCases } from "../tests/testing/differential/grpc_cases.ts";
import * as allowLists from "../tests/probe/differential_allow_list.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    seed: { type: "string", default: "1" },
    count: { type: "string", default: "500" },
    kinds: { type: "string", default: "http,grpc" },
    "timeout-ms": { type: "string", default: "500" },
    concurrency: { type: "string", default: "8" },
    "every-variant": { type: "boolean", default: false },
    havoc: { type: "boolean", default: false },
    show: { type: "string", default: "0" },
    case: { type: "string" },
  },
});
const found = await findKubeletHandlers();
if ("missing" in found) {
  console.error(`fuzz:kubelet: ${found.missing}`);
  Deno.exit(2);
}
const handlers = KubeletHandlers.start(found.path);
const start = performance.now();
let outcomes;
try {
  outcomes = await runDifferential(handlers, {
    seed: Number(values.seed),
    count: Number(values.count),
    kinds: values.kinds.split(",") as Kind[],
    everyVariant: values["every-variant"],
    timeoutMs: Number(values["timeout-ms"]),
    concurrency: Number(values.concurrency),
    havoc: values.havoc,
    only: values.case === undefined ? undefined : Number(values.case),
  });
} finally {
  await handlers.close();
}
const seconds = (performance.now() - start) / 1000;
if (values.case !== undefined) printCase(Number(values.case));
const classified = classify(outcomes, allowLists);
// One replayed case cannot tell which known entries are stale.
if (values.case !== undefined) classified.staleKnown = [];
console.log(formatReport(outcomes, classified));
// The first unexplained differences in full, verdict differences first, for triage.
const shown = [...classified.unexplained].sort((a, b) =>
  (a.difference === "verdict" ? 0 : 1) - (b.difference === "verdict" ? 0 : 1)
).slice(0, Number(values.show));
for (const o of shown) {
  console.log(`unexplained ${o.kind} #${o.index} ${o.cls}/${o.variant} ${o.difference}`);
  console.log(`  kubelet:  ${JSON.stringify(o.kubelet)}`);
  console.log(`  probelet: ${JSON.stringify(o.probelet)}`);
}
console.log(
  `seconds=${seconds.toFixed(1)} cases_per_second=${(outcomes.length / seconds).toFixed(1)}`,
);
Deno.exit(classified.unexplained.length > 0 ? 1 : 0);

// --case N: the bytes the servers wrote for case N of each kind (same seed, count and flags).
function printCase(index: number): void {
  const latin1 = (b: Uint8Array | string) =>
    typeof b === "string" ? `<${b}>` : JSON.stringify(String.fromCharCode(...b));
  const seed = Number(values.seed);
  const count = Number(values.count);
  const options = { everyVariant: values["every-variant"], havoc: values.havoc };
  if (values.kinds.includes("http")) {
    const c = generateHttp1Cases(seed, count, options)[index];
    console.log(`http(s) case ${index}: ${c.cls}/${c.variant} GET ${c.path}`);
    c.responses.forEach((steps, i) =>
      console.log(`  connection ${i}: ${steps.map(latin1).join(" ")}`)
    );
  }
  if (values.kinds.includes("grpc")) {
    const c = generateGrpcCases(seed, count, options)[index];
    console.log(`grpc case ${index}: ${c.cls}/${c.variant} service=${JSON.stringify(c.service)}`);
    console.log(`  on connect: ${c.script.onConnect.map(latin1).join(" ")}`);
    console.log(`  on request: ${c.script.onRequest.map(latin1).join(" ")}`);
  }
}
