/**
 * The registry's metrics and text: what component-base's vectors do (`With(labels).Inc()`,
 * `Delete(labels)`, a gauge set at each scrape) and the exposition details the endpoints' pinned
 * output (tests/kubelet/metrics/exposition_test.ts) does not reach.
 * @module
 */
import { deepStrictEqual as assertEquals, ok, throws } from "node:assert/strict";
import {
  Counter,
  formatValue,
  Gauge,
  Histogram,
  Registry,
} from "../../../src/util/prometheus/mod.ts";

Deno.test("TestFormatValue", async (t) => {
  for (
    const [value, text] of [
      [1, "1"],
      [0.1 + 0.2, "0.30000000000000004"],
      [1e21, "1e+21"],
      [1e-7, "1e-7"],
      [NaN, "Nan"],
      [Infinity, "+Inf"],
      [-Infinity, "-Inf"],
    ] as const
  ) await t.step(`${value} → ${text}`, () => assertEquals(formatValue(value), text));
});

Deno.test("unlabelled metrics start at zero", async () => {
  const registry = new Registry();
  new Counter({ name: "c_total", help: "A counter.", registers: [registry] });
  new Gauge({ name: "g", help: "A gauge.", registers: [registry] });
  new Histogram({ name: "h", help: "A histogram.", buckets: [1], registers: [registry] });
  assertEquals(
    await registry.metrics(),
    "# HELP c_total A counter.\n# TYPE c_total counter\nc_total 0\n\n" +
      "# HELP g A gauge.\n# TYPE g gauge\ng 0\n\n" +
      '# HELP h A histogram.\n# TYPE h histogram\nh_bucket{le="1"} 0\nh_bucket{le="+Inf"} 0\n' +
      "h_sum 0\nh_count 0\n",
  );
});

Deno.test("a counter adds, never subtracts", () => {
  const registry = new Registry();
  const c = new Counter({ name: "c_total", help: "h", registers: [registry] });
  c.inc();
  c.inc(2.5);
  throws(() => c.inc(-1), /not possible to decrease/);
  throws(() => c.inc(Infinity), /not a valid number/);
  assertEquals(c.snapshot(), [{ labels: {}, value: 3.5 }]);
});

Deno.test("a label the metric does not have is refused", () => {
  const c = new Counter({ name: "c_total", help: "h", labelNames: ["pod"] });
  // deno-lint-ignore no-explicit-any
  throws(() => c.inc({ node: "n" } as any), /Added label "node" is not included/);
});

Deno.test("one series per label values, whatever the object", () => {
  const c = new Counter({ name: "c_total", help: "h", labelNames: ["pod", "result"] });
  const labels = { pod: "web", result: "ok" };
  c.inc(labels);
  c.inc(labels);
  c.inc({ result: "ok", pod: "web" }); // the same series: printed with the first object's order
  assertEquals(c.lines(), ['c_total{pod="web",result="ok"} 3']);
  c.remove({ result: "ok", pod: "web" });
  assertEquals(c.lines(), []);
  c.inc(labels); // the remembered object names the series again, from zero
  assertEquals(c.lines(), ['c_total{pod="web",result="ok"} 1']);
});

Deno.test("a gauge prints the labels it was last set with", () => {
  const g = new Gauge({ name: "g", help: "h", labelNames: ["a", "b"] });
  g.set({ a: "1", b: "2" }, 1);
  g.set({ b: "2", a: "1" }, 5);
  assertEquals(g.lines(), ['g{b="2",a="1"} 5']);
});

Deno.test("collect runs before each scrape, all started before any is awaited", async () => {
  const registry = new Registry();
  const order: string[] = [];
  let release!: () => void;
  const shared = new Promise<void>((resolve) => release = resolve);
  new Gauge({
    name: "first",
    help: "h",
    registers: [registry],
    async collect() {
      order.push("first");
      await shared;
      this.set(1);
    },
  });
  new Gauge({
    name: "second",
    help: "h",
    registers: [registry],
    collect() {
      order.push("second");
      release();
      this.set(2);
    },
  });
  const text = await registry.metrics();
  assertEquals(order, ["first", "second"]);
  ok(text.includes("\nfirst 1\n") && text.endsWith("\nsecond 2\n"), text);
});

Deno.test("HELP escapes backslashes and newlines", async () => {
  const registry = new Registry();
  new Gauge({ name: "g", help: "a\\b\nc", registers: [registry] });
  assertEquals(await registry.metrics(), "# HELP g a\\\\b\\nc\n# TYPE g gauge\ng 0\n");
});

Deno.test("names are checked, a name is registered once", () => {
  const registry = new Registry();
  throws(() => new Gauge({ name: "bad-name", help: "h" }), /Invalid metric name/);
  throws(() => new Gauge({ name: "g", help: "h", labelNames: ["bad-label"] }), /Invalid label/);
  throws(() => new Histogram({ name: "h", help: "h", labelNames: ["le"] }), /reserved/);
  new Gauge({ name: "g", help: "h", registers: [registry] });
  throws(() => new Gauge({ name: "g", help: "h", registers: [registry] }), /already been/);
});

Deno.test("a histogram's JSON samples splay `le` before the labels", async () => {
  const h = new Histogram({ name: "h", help: "h", labelNames: ["pod"], buckets: [1, 2] });
  h.observe({ pod: "web" }, 1.5);
  assertEquals((await h.get()).values, [
    { labels: { le: 1, pod: "web" }, value: 0, metricName: "h_bucket" },
    { labels: { le: 2, pod: "web" }, value: 1, metricName: "h_bucket" },
    { labels: { le: "+Inf", pod: "web" }, value: 1, metricName: "h_bucket" },
    { labels: { pod: "web" }, value: 1.5, metricName: "h_sum" },
    { labels: { pod: "web" }, value: 1, metricName: "h_count" },
  ]);
  throws(() => h.observe({ pod: "web" }, NaN), /not a valid number/);
});

Deno.test("label sets whose values hold the key's separators stay two series", async () => {
  const registry = new Registry();
  const counter = new Counter({
    name: "probelet_test_total",
    help: "A test counter.",
    labelNames: ["a", "b"],
    registers: [registry],
  });
  counter.inc({ a: "x,b:y", b: "z" });
  counter.inc({ a: "x", b: "y,b:z" });
  const lines = (await registry.metrics()).split("\n")
    .filter((l) => l.startsWith("probelet_test_total"));
  assertEquals(lines.length, 2);
});
