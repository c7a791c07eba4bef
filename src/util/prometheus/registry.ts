/**
 * A small Prometheus registry: counters, gauges and histograms with labels, written out in the
 * Prometheus text exposition format 0.0.4. What kubelet's `/metrics` and `/metrics/probes` need
 * and no more: no summaries, exemplars, default labels or OpenMetrics.
 *
 * Mirrors the parts of k8s.io/component-base/metrics (legacyregistry, `CounterVec`, `GaugeVec`,
 * `HistogramVec`: `With(labels).Inc()`, `Delete(labels)`) that kubelet's metrics use, and
 * prometheus/common's expfmt text encoder. The text keeps the exact shape probelet served through
 * the npm prom-client package it replaces (tests/kubelet/metrics/exposition_test.ts pins it): a
 * blank line between metrics, labels in the order of the caller's label object with `le` first on
 * a histogram's buckets, `Nan` for NaN, series in the order they were first seen.
 *
 * A label object passed in is kept as the series' labels (its entries are printed at each scrape)
 * and remembered by identity, so a caller that passes the same object every time (a probe worker)
 * costs one map lookup and no allocation per observation: do not change a label object after
 * passing it.
 * @module
 */

/** The content type of {@linkcode Registry.metrics}'s text. */
export const prometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

/** One sample of a metric as {@linkcode Metric.get} returns it. */
export interface MetricValue {
  /** The sample's labels (a histogram's `le` first, then the series' labels). */
  labels: Record<string, string | number>;
  value: number;
  /** Set for a histogram's samples: `<name>_bucket`, `<name>_sum` or `<name>_count`. */
  metricName?: string;
}

/** A metric's samples at one moment. */
export interface MetricSnapshot {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  values: MetricValue[];
}

/** The options every metric takes (`M`: the metric `collect` is called on). */
export interface MetricOptions<T extends string, M = never> {
  /** The metric's name (`[a-zA-Z_:][a-zA-Z0-9_:]*`). */
  name: string;
  /** The HELP text (with component-base's stability prefix where kubelet has one). */
  help: string;
  /** The label names every series sets. */
  labelNames?: readonly T[];
  /** The registries the metric is registered in. */
  registers?: Registry[];
  /** Called before each scrape (as `this`: the metric) to set the metric's values. */
  collect?: (this: M) => void | Promise<void>;
}

/** One series' labels: every label name set to a string (or a number, printed as JS prints it). */
export type Labels<T extends string> = Partial<Record<T, string | number>>;

const metricNamePattern = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const labelNamePattern = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * A sample value as the exposition writes it: JavaScript's number text, `Nan`, `+Inf`, `-Inf`.
 *
 * @example
 * ```ts
 * formatValue(0.1 + 0.2); // "0.30000000000000004"
 * formatValue(NaN); // "Nan"
 * ```
 */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return "Nan";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return `${value}`;
}

function escapeText(text: string): string {
  return text.replaceAll("\\", "\\\\").replaceAll("\n", "\\n");
}

function escapeLabelValue(value: string | number): string {
  return typeof value === "string" ? escapeText(value).replaceAll('"', '\\"') : `${value}`;
}

/** `name="value",...` for the entries of `labels`, in their order. */
function formatLabels(labels: Record<string, string | number | undefined>): string {
  let text = "";
  for (const name in labels) {
    const value = labels[name];
    if (value === undefined) continue;
    text += `${text ? "," : ""}${name}="${escapeLabelValue(value)}"`;
  }
  return text;
}

/**
 * A series' identity: its label names and values in label-name order (an unset label is left out),
 * each ended by a NUL, which no label value written by probelet holds, so no two label sets share a
 * key.
 */
function seriesKey(sortedNames: readonly string[], labels: Record<string, unknown>): string {
  let key = "";
  for (const name of sortedNames) {
    const value = labels[name];
    if (value !== undefined) key += `${name}\u0000${value}\u0000`;
  }
  return key;
}

/** A series' labels and their exposition text. */
export interface Series {
  /** The label object the series was made (or last set) with. */
  labels: Record<string, string | number | undefined>;
  /** `formatLabels(labels)`, kept while `labels` is the same object. */
  text: string;
}

/**
 * What every metric shares: its series by key, and the key of each label object seen.
 *
 * @example
 * ```ts
 * const metric: Metric<"pod", Series> = new Counter({ name: "c_total", help: "h", labelNames: ["pod"] });
 * metric.remove({ pod: "web" });
 * ```
 */
export abstract class Metric<T extends string, S extends Series> {
  /** The metric's name. */
  readonly name: string;
  /** The HELP text. */
  readonly help: string;
  /** The label names every series sets. */
  readonly labelNames: readonly T[];
  /** The metric's TYPE. */
  abstract readonly type: MetricSnapshot["type"];
  readonly #collect?: () => void | Promise<void>;
  readonly #sortedNames: readonly string[];
  readonly #keys = new WeakMap<object, string>();
  /** The series by key, in the order they were first seen. */
  protected series = new Map<string, S>();

  /** Checks the names and registers the metric in `options.registers`. */
  constructor(options: MetricOptions<T>) {
    if (!metricNamePattern.test(options.name)) throw new Error("Invalid metric name");
    if (!options.help) throw new Error("Missing mandatory help parameter");
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames ?? [];
    if (!this.labelNames.every((n) => labelNamePattern.test(n))) {
      throw new Error("Invalid label name");
    }
    this.#sortedNames = this.labelNames.toSorted();
    this.#collect = options.collect as (() => void | Promise<void>) | undefined;
    for (const registry of options.registers ?? []) registry.register(this);
  }

  /** The key of the series `labels` names, checking the label names once per label object. */
  protected keyOf(labels: Labels<T>): string {
    const known = this.#keys.get(labels);
    if (known !== undefined) return known;
    for (const name in labels) {
      if (!this.labelNames.includes(name as T)) {
        throw new Error(
          `Added label "${name}" is not included in initial labelset: ${
            JSON.stringify(this.labelNames)
          }`,
        );
      }
    }
    const key = seriesKey(this.#sortedNames, labels);
    this.#keys.set(labels, key);
    return key;
  }

  /** The series `labels` names, made by `create` when it does not exist yet. */
  protected seriesOf(labels: Labels<T>, create: (labels: Series["labels"]) => S): S {
    const key = this.keyOf(labels);
    let series = this.series.get(key);
    if (!series) {
      series = create(labels);
      this.series.set(key, series);
    }
    return series;
  }

  /**
   * Deletes the series `labels` names (component-base's `Delete`).
   *
   * @example
   * ```ts
   * const c = new Counter({ name: "c_total", help: "h", labelNames: ["pod"] });
   * c.inc({ pod: "web" });
   * c.remove({ pod: "web" });
   * ```
   */
  remove(labels: Labels<T>): void {
    this.series.delete(this.keyOf(labels));
  }

  /** Runs the metric's `collect` (before a scrape). */
  collect(): void | Promise<void> {
    return this.#collect?.call(this);
  }

  /** The samples as they are now, without collecting. */
  abstract snapshot(): MetricValue[];

  /** The exposition lines of the samples as they are now, without collecting. */
  abstract lines(): string[];

  /**
   * Collects, then returns the samples.
   *
   * @example
   * ```ts
   * const g = new Gauge({ name: "g", help: "h" });
   * g.set(2);
   * (await g.get()).values; // [{ labels: {}, value: 2 }]
   * ```
   */
  async get(): Promise<MetricSnapshot> {
    await this.collect();
    return { name: this.name, help: this.help, type: this.type, values: this.snapshot() };
  }
}

interface ValueSeries extends Series {
  value: number;
}

function valueSeries(labels: Series["labels"], value = 0): ValueSeries {
  return { labels, text: formatLabels(labels), value };
}

/** Counter and gauge: one number per series. */
abstract class ValueMetric<T extends string> extends Metric<T, ValueSeries> {
  constructor(options: MetricOptions<T, never>) {
    super(options);
    if (this.labelNames.length === 0) this.series.set("", valueSeries({}));
  }

  snapshot(): MetricValue[] {
    return [...this.series.values()].map((s) => ({
      labels: s.labels as Record<string, string | number>,
      value: s.value,
    }));
  }

  lines(): string[] {
    const lines = [];
    for (const s of this.series.values()) {
      lines.push(`${this.name}${s.text ? `{${s.text}}` : ""} ${formatValue(s.value)}`);
    }
    return lines;
  }
}

/**
 * A counter: only goes up, by 1 or a given amount.
 *
 * @example
 * ```ts
 * const registry = new Registry();
 * const probes = new Counter({
 *   name: "prober_probe_total",
 *   help: "Probes by result.",
 *   labelNames: ["result"],
 *   registers: [registry],
 * });
 * probes.inc({ result: "successful" });
 * await registry.metrics(); // '...prober_probe_total{result="successful"} 1\n'
 * ```
 */
export class Counter<T extends string = string> extends ValueMetric<T> {
  /** "counter". */
  readonly type = "counter";

  /** A counter registered in `options.registers`. */
  constructor(options: MetricOptions<T, Counter<T>>) {
    super(options);
  }

  /** Adds `value` (default 1) to the series `labels` names, or to the unlabelled series. */
  inc(labels?: Labels<T> | number, value?: number): void {
    if (typeof labels === "number") [labels, value] = [undefined, labels];
    if (value !== undefined && value !== 0 && !Number.isFinite(value)) {
      throw new TypeError(`Value is not a valid number: ${value}`);
    }
    if (value !== undefined && value < 0) {
      throw new Error("It is not possible to decrease a counter");
    }
    const series = labels ? this.seriesOf(labels, valueSeries) : this.#unlabelled();
    series.value += value ?? 1;
  }

  #unlabelled(): ValueSeries {
    let series = this.series.get("");
    if (!series) this.series.set("", series = valueSeries({}));
    return series;
  }
}

/**
 * A gauge: set to a value at each change or each scrape (in `collect`).
 *
 * @example
 * ```ts
 * const registry = new Registry();
 * const pods = new Gauge({ name: "kubelet_running_pods", help: "Pods.", registers: [registry] });
 * pods.set(3);
 * await registry.metrics(); // "...kubelet_running_pods 3\n"
 * ```
 */
export class Gauge<T extends string = string> extends ValueMetric<T> {
  /** "gauge". */
  readonly type = "gauge";

  /** A gauge registered in `options.registers`; `options.collect` sets it at each scrape. */
  constructor(options: MetricOptions<T, Gauge<T>>) {
    super(options);
  }

  /** Sets the series `labels` names (the unlabelled series when only a value is given). */
  set(labels: Labels<T> | number, value?: number): void {
    if (typeof labels === "number") [labels, value] = [{}, labels];
    if (typeof value !== "number") throw new TypeError(`Value is not a valid number: ${value}`);
    const key = this.keyOf(labels);
    const series = this.series.get(key);
    if (!series) {
      this.series.set(key, valueSeries(labels, value));
      return;
    }
    // As a new series in the old one's place: the labels printed are the last object's.
    if (series.labels !== labels) {
      series.labels = labels;
      series.text = formatLabels(labels);
    }
    series.value = value;
  }
}

interface HistogramSeries extends Series {
  /** Observations per bucket (not cumulative), the last one above every bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** The options of a histogram. */
export interface HistogramOptions<T extends string> extends MetricOptions<T, Histogram<T>> {
  /** The buckets' upper bounds, ascending (Prometheus' DefBuckets by default). */
  buckets?: readonly number[];
}

/** Prometheus' DefBuckets. */
const defaultBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * A histogram: observations counted in buckets, with their sum and count.
 *
 * @example
 * ```ts
 * const registry = new Registry();
 * const durations = new Histogram({
 *   name: "prober_probe_duration_seconds",
 *   help: "Probe durations.",
 *   labelNames: ["probe_type"],
 *   registers: [registry],
 * });
 * durations.observe({ probe_type: "Readiness" }, 0.02);
 * await registry.metrics(); // '...prober_probe_duration_seconds_bucket{le="0.025",probe_type=...'
 * ```
 */
export class Histogram<T extends string = string> extends Metric<T, HistogramSeries> {
  /** "histogram". */
  readonly type = "histogram";
  /** The buckets' upper bounds. */
  readonly upperBounds: readonly number[];
  readonly #create = (labels: Series["labels"]): HistogramSeries => ({
    labels,
    text: formatLabels(labels),
    counts: new Float64Array(this.upperBounds.length + 1),
    sum: 0,
    count: 0,
  });

  /** A histogram registered in `options.registers`. */
  constructor(options: HistogramOptions<T>) {
    super(options);
    if (this.labelNames.includes("le" as T)) throw new Error("le is a reserved label keyword");
    this.upperBounds = [...(options.buckets ?? defaultBuckets)];
    if (this.labelNames.length === 0) this.series.set("", this.#create({}));
  }

  /** Counts `value` in the series `labels` names (or the unlabelled series). */
  observe(labels: Labels<T> | number, value?: number): void {
    if (typeof labels === "number") [labels, value] = [{}, labels];
    if (typeof value !== "number" || !Number.isFinite(value)) {
      throw new TypeError(`Value is not a valid number: ${value}`);
    }
    const series = this.seriesOf(labels, this.#create);
    let bucket = 0;
    while (bucket < this.upperBounds.length && value > this.upperBounds[bucket]) bucket++;
    series.counts[bucket]++;
    series.sum += value;
    series.count++;
  }

  snapshot(): MetricValue[] {
    const values: MetricValue[] = [];
    for (const s of this.series.values()) {
      const labels = s.labels as Record<string, string | number>;
      let cumulative = 0;
      this.upperBounds.forEach((le, i) => {
        cumulative += s.counts[i];
        values.push({ labels: { le, ...labels }, value: cumulative, metricName: this.#bucket });
      });
      values.push(
        { labels: { le: "+Inf", ...labels }, value: s.count, metricName: this.#bucket },
        { labels: { ...labels }, value: s.sum, metricName: `${this.name}_sum` },
        { labels: { ...labels }, value: s.count, metricName: `${this.name}_count` },
      );
    }
    return values;
  }

  lines(): string[] {
    const lines = [];
    for (const s of this.series.values()) {
      const rest = s.text ? `,${s.text}` : "";
      let cumulative = 0;
      this.upperBounds.forEach((le, i) => {
        cumulative += s.counts[i];
        lines.push(`${this.#bucket}{le="${le}"${rest}} ${formatValue(cumulative)}`);
      });
      const own = s.text ? `{${s.text}}` : "";
      lines.push(
        `${this.#bucket}{le="+Inf"${rest}} ${formatValue(s.count)}`,
        `${this.name}_sum${own} ${formatValue(s.sum)}`,
        `${this.name}_count${own} ${formatValue(s.count)}`,
      );
    }
    return lines;
  }

  get #bucket(): string {
    return `${this.name}_bucket`;
  }
}

/**
 * The metrics one endpoint serves, in the order they were registered.
 *
 * @example
 * ```ts
 * const registry = new Registry();
 * new Gauge({ name: "up", help: "Whether it is up.", registers: [registry] }).set(1);
 * await registry.metrics(); // "# HELP up Whether it is up.\n# TYPE up gauge\nup 1\n"
 * ```
 */
export class Registry {
  /** The content type of {@linkcode Registry.metrics}'s text. */
  readonly contentType = prometheusContentType;
  readonly #metrics = new Map<string, Metric<string, Series>>();

  /** Adds `metric`; a second metric of the same name is refused. */
  register(metric: Metric<string, Series>): void {
    const known = this.#metrics.get(metric.name);
    if (known && known !== metric) {
      throw new Error(`A metric with the name ${metric.name} has already been registered.`);
    }
    this.#metrics.set(metric.name, metric);
  }

  /**
   * Every metric's `collect`, all started before any is awaited (metrics that share one
   * measurement start it once), then the text exposition of them all.
   */
  async metrics(): Promise<string> {
    const metrics = [...this.#metrics.values()];
    await Promise.all(metrics.map((m) => m.collect()));
    return `${
      metrics.map((m) => {
        const name = escapeText(m.name);
        return [`# HELP ${name} ${escapeText(m.help)}`, `# TYPE ${name} ${m.type}`, ...m.lines()]
          .join("\n");
      }).join("\n\n")
    }\n`;
  }

  /** Every metric's samples after collecting (for tests and debugging). */
  async getMetricsAsJSON(): Promise<MetricSnapshot[]> {
    return await Promise.all([...this.#metrics.values()].map((m) => m.get()));
  }
}
