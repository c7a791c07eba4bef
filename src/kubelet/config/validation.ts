/**
 * Validation of a decoded Pod manifest: the subset of the API server's Pod validation that probelet
 * relies on, plus the type checks that Go's JSON decoding does implicitly (a port written as a
 * boolean, a label value written as a number). Each problem is reported as a {@link FieldError}
 * naming the field the way the user wrote it: `spec.containers[0].livenessProbe.successThreshold`.
 * Mirrors the relevant parts of kubernetes' pkg/apis/core/validation/validation.go.
 * @module
 */
import type { Pod } from "../../api/core/v1/mod.ts";
import { podLogsDirectoryName } from "../kuberuntime/helpers.ts";
import { goQuote } from "../../util/go_format.ts";

/**
 * One problem with one field, like apimachinery's `field.Error`. Printed as `<field>: <detail>`;
 * the detail of the Required, Duplicate and Unsupported kinds uses the API server's wording
 * (`Required value`, `Duplicate value: "app"`, `Unsupported value: "x": supported values: ...`).
 *
 * @example
 * ```ts
 * const e: FieldError = { field: "metadata.name", detail: "Required value" };
 * formatFieldError(e); // "metadata.name: Required value"
 * ```
 */
export interface FieldError {
  /** The field path, e.g. `spec.containers[1].name`; empty for the document itself. */
  field: string;
  /** What is wrong with it. */
  detail: string;
}

/**
 * Formats a field error as `<field>: <detail>` (just the detail when the field is empty).
 *
 * @example
 * ```ts
 * formatFieldError({ field: "kind", detail: "Required value" }); // "kind: Required value"
 * ```
 */
export function formatFieldError(e: FieldError): string {
  return e.field === "" ? e.detail : `${e.field}: ${e.detail}`;
}

/** The probe kinds a container can carry, by their field names. */
const probeFields = ["livenessProbe", "readinessProbe", "startupProbe"] as const;
type ProbeField = typeof probeFields[number];

const handlerFields = ["exec", "httpGet", "tcpSocket", "grpc"] as const;

const dns1123LabelPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123LabelMaxLength = 63;
const dns1123SubdomainPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const dns1123SubdomainMaxLength = 253;
const ianaServiceNamePattern = /^[-a-z0-9]+$/;
// The API server does not check a client-given uid (it assigns its own on create); a static pod's
// uid is used as a file name, so it must be one safe path segment. Every UUID passes.
const uidPattern = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
/** Longest `metadata.uid` accepted (a UUID has 36 characters). */
export const uidMaxLength = 128;
/** Largest value of an int32 API field (Go's JSON decoder refuses anything beyond). */
export const maxInt32 = 2147483647;
/** Longest file name Linux file systems accept, in bytes (`NAME_MAX`). */
export const maxFileNameBytes = 255;
const httpHeaderNamePattern = /^[-A-Za-z0-9]+$/;

/**
 * Validates a decoded manifest document as a v1 Pod. `doc` is the raw value (mappings with
 * `null` values already removed, see {@link dropNullFields}); the result lists every problem
 * found, in document order, and is empty for a valid pod.
 *
 * @example
 * ```ts
 * validatePod({ apiVersion: "v1", kind: "Pod", metadata: {}, spec: { containers: [] } });
 * // [{ field: "metadata.name", detail: "Required value" }, { field: "spec.containers", detail: "Required value" }]
 * ```
 */
export function validatePod(doc: unknown): FieldError[] {
  const v = new Validator();
  if (!isMapping(doc)) {
    v.add("", `must be a mapping (a Pod object), got ${describe(doc)}`);
    return v.errors;
  }
  if (doc.apiVersion === undefined) {
    v.add("apiVersion", "Required value");
  } else if (v.string("apiVersion", doc.apiVersion) && doc.apiVersion !== "v1") {
    v.add("apiVersion", unsupported(doc.apiVersion, ["v1"]));
  }
  if (doc.kind === undefined) {
    v.add("kind", "Required value");
  } else if (v.string("kind", doc.kind) && doc.kind !== "Pod") {
    v.add("kind", unsupported(doc.kind, ["Pod"]));
    // The rest of the document describes something else: its field errors would only confuse.
    return v.errors;
  }
  validateObjectMeta(v, doc.metadata);
  validatePodSpec(v, doc.spec);
  return v.errors;
}

/**
 * Checks what only exists once a static pod has its identity (the node-suffixed name, the uid,
 * the namespace default): the name is still a valid DNS-1123 subdomain, and the pod's log folder
 * name (`<namespace>_<name>_<uid>`) fits in one file name ({@link maxFileNameBytes} bytes).
 *
 * @example
 * ```ts
 * validateStaticPodIdentity({ metadata: { name: "web-node", namespace: "default", uid: "1" }, spec: { containers: [] } });
 * // []
 * ```
 */
export function validateStaticPodIdentity(pod: Pod): FieldError[] {
  const v = new Validator();
  const { name = "", namespace = "", uid = "" } = pod.metadata;
  checkDns1123Subdomain(v, "metadata.name", name);
  const folder = podLogsDirectoryName(namespace, name, uid);
  const bytes = new TextEncoder().encode(folder).length;
  if (v.errors.length === 0 && bytes > maxFileNameBytes) {
    v.add(
      "metadata.name",
      `name and namespace too long: the pod's log folder name ${shortQuote(folder)} would be ` +
        `${bytes} bytes, more than the ${maxFileNameBytes}-byte file name limit`,
    );
  }
  return v.errors;
}

/**
 * Returns a copy of `value` without mapping entries whose value is `null` (at any depth), because
 * the API treats `field: null` (or an empty `field:` in YAML) as an absent field. Nulls inside
 * lists are kept so that validation can report them.
 *
 * @example
 * ```ts
 * dropNullFields({ a: null, b: { c: null, d: 1 }, e: [null] }); // { b: { d: 1 }, e: [null] }
 * ```
 */
export function dropNullFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropNullFields);
  if (isMapping(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v !== null && v !== undefined) out[k] = dropNullFields(v);
    }
    return out;
  }
  return value;
}

/** Collects errors and offers the type checks that Go's decoder would have done. */
class Validator {
  readonly errors: FieldError[] = [];

  add(field: string, detail: string): void {
    this.errors.push({ field, detail });
  }

  string(field: string, value: unknown): value is string {
    if (typeof value === "string") return true;
    this.add(field, `must be a string, got ${describe(value)}`);
    return false;
  }

  boolean(field: string, value: unknown): value is boolean {
    if (typeof value === "boolean") return true;
    this.add(field, `must be a boolean, got ${describe(value)}`);
    return false;
  }

  integer(field: string, value: unknown): value is number {
    if (typeof value === "number" && Number.isSafeInteger(value)) return true;
    this.add(field, `must be an integer, got ${describe(value)}`);
    return false;
  }

  mapping(field: string, value: unknown): value is Record<string, unknown> {
    if (isMapping(value)) return true;
    this.add(field, `must be a mapping, got ${describe(value)}`);
    return false;
  }

  list(field: string, value: unknown): value is unknown[] {
    if (Array.isArray(value)) return true;
    this.add(field, `must be a list, got ${describe(value)}`);
    return false;
  }

  stringList(field: string, value: unknown): value is string[] {
    if (!this.list(field, value)) return false;
    let ok = true;
    value.forEach((item, i) => ok = this.string(`${field}[${i}]`, item) && ok);
    return ok;
  }

  stringMap(field: string, value: unknown): void {
    if (!this.mapping(field, value)) return;
    for (const [k, item] of Object.entries(value)) this.string(`${field}[${goQuote(k)}]`, item);
  }

  nonNegativeInteger(field: string, value: unknown, options: { int32?: boolean } = {}): void {
    if (value === undefined || !this.integer(field, value)) return;
    if (value < 0) this.add(field, "must be greater than or equal to 0");
    else if (options.int32) this.int32(field, value);
  }

  /** Go's decoder refuses a number that does not fit the field's int32. */
  int32(field: string, value: number): boolean {
    if (value >= -maxInt32 - 1 && value <= maxInt32) return true;
    this.add(field, `${value}: must be a 32-bit integer (at most ${maxInt32})`);
    return false;
  }
}

function validateObjectMeta(v: Validator, meta: unknown): void {
  if (meta === undefined) {
    v.add("metadata.name", "Required value");
    return;
  }
  if (!v.mapping("metadata", meta)) return;
  if (meta.name === undefined || meta.name === "") {
    v.add("metadata.name", "Required value");
  } else if (v.string("metadata.name", meta.name)) {
    checkDns1123Subdomain(v, "metadata.name", meta.name);
  }
  if (meta.namespace !== undefined && v.string("metadata.namespace", meta.namespace)) {
    if (meta.namespace !== "") checkDns1123Label(v, "metadata.namespace", meta.namespace);
  }
  if (meta.uid !== undefined && v.string("metadata.uid", meta.uid) && meta.uid !== "") {
    checkUID(v, "metadata.uid", meta.uid);
  }
  if (meta.labels !== undefined) v.stringMap("metadata.labels", meta.labels);
  if (meta.annotations !== undefined) v.stringMap("metadata.annotations", meta.annotations);
}

function validatePodSpec(v: Validator, spec: unknown): void {
  if (spec === undefined) {
    v.add("spec", "Required value");
    return;
  }
  if (!v.mapping("spec", spec)) return;

  const names = new Set<string>();
  if (spec.initContainers !== undefined && v.list("spec.initContainers", spec.initContainers)) {
    spec.initContainers.forEach((c, i) =>
      validateContainer(v, `spec.initContainers[${i}]`, c, { init: true, names })
    );
  }
  if (
    spec.containers === undefined || (Array.isArray(spec.containers) && !spec.containers.length)
  ) {
    v.add("spec.containers", "Required value");
  } else if (v.list("spec.containers", spec.containers)) {
    spec.containers.forEach((c, i) =>
      validateContainer(v, `spec.containers[${i}]`, c, { init: false, names })
    );
  }

  if (spec.restartPolicy !== undefined && v.string("spec.restartPolicy", spec.restartPolicy)) {
    const supported = ["Always", "OnFailure", "Never"];
    if (!supported.includes(spec.restartPolicy)) {
      v.add("spec.restartPolicy", unsupported(spec.restartPolicy, supported));
    }
  }
  v.nonNegativeInteger("spec.terminationGracePeriodSeconds", spec.terminationGracePeriodSeconds);
  if (spec.hostNetwork !== undefined) v.boolean("spec.hostNetwork", spec.hostNetwork);
  if (spec.nodeName !== undefined) v.string("spec.nodeName", spec.nodeName);
  if (spec.readinessGates !== undefined && v.list("spec.readinessGates", spec.readinessGates)) {
    spec.readinessGates.forEach((gate, i) => {
      const field = `spec.readinessGates[${i}]`;
      if (!v.mapping(field, gate)) return;
      if (gate.conditionType === undefined || gate.conditionType === "") {
        v.add(`${field}.conditionType`, "Required value");
      } else {
        v.string(`${field}.conditionType`, gate.conditionType);
      }
    });
  }
}

function validateContainer(
  v: Validator,
  field: string,
  c: unknown,
  options: { init: boolean; names: Set<string> },
): void {
  if (!v.mapping(field, c)) return;

  if (c.name === undefined || c.name === "") {
    v.add(`${field}.name`, "Required value");
  } else if (v.string(`${field}.name`, c.name)) {
    checkDns1123Label(v, `${field}.name`, c.name);
    if (options.names.has(c.name)) v.add(`${field}.name`, `Duplicate value: ${goQuote(c.name)}`);
    options.names.add(c.name);
  }

  if (c.image === undefined || c.image === "") {
    v.add(`${field}.image`, "Required value");
  } else if (v.string(`${field}.image`, c.image) && c.image.trim() !== c.image) {
    v.add(`${field}.image`, "must not have leading or trailing whitespace");
  }
  if (c.command !== undefined) v.stringList(`${field}.command`, c.command);
  if (c.args !== undefined) v.stringList(`${field}.args`, c.args);
  if (c.workingDir !== undefined) v.string(`${field}.workingDir`, c.workingDir);
  if (c.imagePullPolicy !== undefined && v.string(`${field}.imagePullPolicy`, c.imagePullPolicy)) {
    const supported = ["Always", "IfNotPresent", "Never"];
    if (!supported.includes(c.imagePullPolicy)) {
      v.add(`${field}.imagePullPolicy`, unsupported(c.imagePullPolicy, supported));
    }
  }
  if (c.env !== undefined) validateEnv(v, `${field}.env`, c.env);
  if (c.ports !== undefined) validatePorts(v, `${field}.ports`, c.ports);

  let restartable = false;
  if (c.restartPolicy !== undefined && v.string(`${field}.restartPolicy`, c.restartPolicy)) {
    if (!options.init) {
      v.add(`${field}.restartPolicy`, "may not be set for non-init containers");
    } else if (c.restartPolicy !== "Always") {
      v.add(`${field}.restartPolicy`, unsupported(c.restartPolicy, ["Always"]));
    } else {
      restartable = true;
    }
  }

  for (const probeField of probeFields) {
    const probe = c[probeField];
    if (probe === undefined) continue;
    if (options.init && !restartable) {
      v.add(
        `${field}.${probeField}`,
        "may not be set for init containers without restartPolicy=Always",
      );
      continue;
    }
    validateProbe(v, `${field}.${probeField}`, probe, probeField);
  }
}

function validateEnv(v: Validator, field: string, env: unknown): void {
  if (!v.list(field, env)) return;
  env.forEach((e, i) => {
    const at = `${field}[${i}]`;
    if (!v.mapping(at, e)) return;
    if (e.name === undefined || e.name === "") {
      v.add(`${at}.name`, "Required value");
    } else if (v.string(`${at}.name`, e.name) && e.name.includes("=")) {
      v.add(
        `${at}.name`,
        `${goQuote(e.name)} is not a valid environment variable name: may not contain '='`,
      );
    }
    if (e.value !== undefined) v.string(`${at}.value`, e.value);
    if (e.valueFrom !== undefined) v.mapping(`${at}.valueFrom`, e.valueFrom);
  });
}

/** Returns whether the list is well-formed enough to look named ports up in it. */
function validatePorts(v: Validator, field: string, ports: unknown): boolean {
  if (!v.list(field, ports)) return false;
  const before = v.errors.length;
  const names = new Set<string>();
  ports.forEach((p, i) => {
    const at = `${field}[${i}]`;
    if (!v.mapping(at, p)) return;
    if (p.containerPort === undefined) {
      v.add(`${at}.containerPort`, "Required value");
    } else if (v.integer(`${at}.containerPort`, p.containerPort)) {
      checkPortNumber(v, `${at}.containerPort`, p.containerPort);
    }
    if (p.hostPort !== undefined && v.integer(`${at}.hostPort`, p.hostPort) && p.hostPort !== 0) {
      checkPortNumber(v, `${at}.hostPort`, p.hostPort);
    }
    if (p.name !== undefined && v.string(`${at}.name`, p.name) && p.name !== "") {
      checkPortName(v, `${at}.name`, p.name);
      if (names.has(p.name)) v.add(`${at}.name`, `Duplicate value: ${goQuote(p.name)}`);
      names.add(p.name);
    }
    if (p.protocol !== undefined && v.string(`${at}.protocol`, p.protocol)) {
      const supported = ["TCP", "UDP", "SCTP"];
      if (!supported.includes(p.protocol)) {
        v.add(`${at}.protocol`, unsupported(p.protocol, supported));
      }
    }
    if (p.hostIP !== undefined) v.string(`${at}.hostIP`, p.hostIP);
  });
  return v.errors.length === before;
}

function validateProbe(
  v: Validator,
  field: string,
  probe: unknown,
  kind: ProbeField,
): void {
  if (!v.mapping(field, probe)) return;

  const handlers = handlerFields.filter((h) => probe[h] !== undefined);
  if (handlers.length === 0) {
    v.add(field, "Required value: must specify a handler type");
  } else if (handlers.length > 1) {
    v.add(field, "may not specify more than 1 handler type");
  }
  if (probe.exec !== undefined) validateExecAction(v, `${field}.exec`, probe.exec);
  if (probe.httpGet !== undefined) validateHttpGet(v, `${field}.httpGet`, probe.httpGet);
  if (probe.tcpSocket !== undefined) {
    validateTcpSocket(v, `${field}.tcpSocket`, probe.tcpSocket);
  }
  if (probe.grpc !== undefined) validateGrpc(v, `${field}.grpc`, probe.grpc);

  for (
    const name of [
      "initialDelaySeconds",
      "timeoutSeconds",
      "periodSeconds",
      "successThreshold",
      "failureThreshold",
    ]
  ) {
    v.nonNegativeInteger(`${field}.${name}`, probe[name], { int32: true });
  }
  // The API requires 1 for liveness and startup probes after defaulting, so 0 (= default) passes.
  const success = probe.successThreshold;
  if (
    kind !== "readinessProbe" && typeof success === "number" && Number.isSafeInteger(success) &&
    success > 1
  ) {
    v.add(`${field}.successThreshold`, "must be 1");
  }

  const grace = probe.terminationGracePeriodSeconds;
  if (grace !== undefined) {
    if (kind === "readinessProbe") {
      v.add(`${field}.terminationGracePeriodSeconds`, "must not be set for readinessProbes");
    } else if (v.integer(`${field}.terminationGracePeriodSeconds`, grace) && grace <= 0) {
      v.add(`${field}.terminationGracePeriodSeconds`, "must be greater than 0");
    }
  }
}

function validateExecAction(v: Validator, field: string, exec: unknown): void {
  if (!v.mapping(field, exec)) return;
  if (exec.command === undefined || (Array.isArray(exec.command) && !exec.command.length)) {
    v.add(`${field}.command`, "Required value");
  } else {
    v.stringList(`${field}.command`, exec.command);
  }
}

function validateHttpGet(
  v: Validator,
  field: string,
  action: unknown,
): void {
  if (!v.mapping(field, action)) return;
  validateProbePort(v, `${field}.port`, action.port);
  if (action.path !== undefined) v.string(`${field}.path`, action.path);
  if (action.host !== undefined) v.string(`${field}.host`, action.host);
  if (action.scheme !== undefined && v.string(`${field}.scheme`, action.scheme)) {
    const supported = ["HTTP", "HTTPS"];
    if (action.scheme !== "" && !supported.includes(action.scheme)) {
      v.add(`${field}.scheme`, unsupported(action.scheme, supported));
    }
  }
  const headers = action.httpHeaders;
  if (headers !== undefined && v.list(`${field}.httpHeaders`, headers)) {
    headers.forEach((h, i) => {
      const at = `${field}.httpHeaders[${i}]`;
      if (!v.mapping(at, h)) return;
      if (h.name === undefined || h.name === "") {
        v.add(`${at}.name`, "Required value");
      } else if (v.string(`${at}.name`, h.name) && !httpHeaderNamePattern.test(h.name)) {
        v.add(
          `${at}.name`,
          `${goQuote(h.name)} is not a valid HTTP header name: use letters, digits and '-'`,
        );
      }
      if (h.value === undefined) {
        v.add(`${at}.value`, "Required value");
      } else {
        v.string(`${at}.value`, h.value);
      }
    });
  }
}

function validateTcpSocket(
  v: Validator,
  field: string,
  action: unknown,
): void {
  if (!v.mapping(field, action)) return;
  validateProbePort(v, `${field}.port`, action.port);
  if (action.host !== undefined) v.string(`${field}.host`, action.host);
}

function validateGrpc(v: Validator, field: string, action: unknown): void {
  if (!v.mapping(field, action)) return;
  if (action.port === undefined) {
    v.add(`${field}.port`, "Required value");
  } else if (v.integer(`${field}.port`, action.port)) {
    checkPortNumber(v, `${field}.port`, action.port);
  }
  if (action.service !== undefined) v.string(`${field}.service`, action.service);
}

/**
 * An HTTP or TCP probe port: a number in range, or a well-formed port name
 * (apimachinery's ValidatePortNumOrName). Whether the container declares that name is not checked
 * here: kubelet runs such a pod and the probe errors at run time (`port http not found`).
 */
function validateProbePort(
  v: Validator,
  field: string,
  port: unknown,
): void {
  if (port === undefined || port === "") {
    v.add(field, "Required value");
    return;
  }
  if (typeof port === "number" && Number.isSafeInteger(port)) {
    checkPortNumber(v, field, port);
    return;
  }
  if (typeof port !== "string") {
    v.add(field, `must be an integer or a string, got ${describe(port)}`);
    return;
  }
  checkPortName(v, field, port);
}

function checkPortNumber(v: Validator, field: string, port: number): void {
  if (port < 1 || port > 65535) v.add(field, `${port}: must be between 1 and 65535, inclusive`);
}

function checkPortName(v: Validator, field: string, name: string): void {
  const problems: string[] = [];
  if (name.length > 15) problems.push("must be no more than 15 characters");
  if (!ianaServiceNamePattern.test(name)) {
    problems.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
  }
  if (name.includes("--")) problems.push("must not contain consecutive hyphens");
  if (!/[a-z]/.test(name)) problems.push("must contain at least one letter (a-z)");
  if (name.startsWith("-") || name.endsWith("-")) {
    problems.push("must not begin or end with a hyphen");
  }
  if (problems.length) v.add(field, `${shortQuote(name)}: ${problems.join(", ")}`);
}

function checkUID(v: Validator, field: string, uid: string): void {
  if (uid.length > uidMaxLength || !uidPattern.test(uid) || uid.includes("..")) {
    v.add(
      field,
      `${shortQuote(uid)} is not a valid uid: it must consist of alphanumeric characters, '-', ` +
        `'_' or '.', start and end with an alphanumeric character, contain no "..", and be at ` +
        `most ${uidMaxLength} characters (e.g. a UUID)`,
    );
  }
}

function checkDns1123Label(v: Validator, field: string, value: string): void {
  if (value.length > dns1123LabelMaxLength || !dns1123LabelPattern.test(value)) {
    v.add(
      field,
      `${
        shortQuote(value)
      } is not a valid name: a lowercase RFC 1123 label must consist of lower ` +
        `case alphanumeric characters or '-', start and end with an alphanumeric character, and ` +
        `be at most ${dns1123LabelMaxLength} characters (e.g. "my-name" or "123-abc")`,
    );
  }
}

function checkDns1123Subdomain(v: Validator, field: string, value: string): void {
  if (value.length > dns1123SubdomainMaxLength || !dns1123SubdomainPattern.test(value)) {
    v.add(
      field,
      `${shortQuote(value)} is not a valid name: a lowercase RFC 1123 subdomain must consist of ` +
        `lower case alphanumeric characters, '-' or '.', start and end with an alphanumeric ` +
        `character, and be at most ${dns1123SubdomainMaxLength} characters (e.g. "example.com")`,
    );
  }
}

function unsupported(value: string, supported: string[]): string {
  return `Unsupported value: ${shortQuote(value)}: supported values: ${
    supported.map(goQuote).join(", ")
  }`;
}

/** Longest prefix of a value quoted in an error: a manifest may be a secret file's symlink. */
export const maxQuotedLength = 40;

/**
 * Quotes at most the first {@link maxQuotedLength} characters of `s`, and says how long the rest
 * is, so that an error never carries a whole file (`"abc..." (1234 more characters)`).
 */
export function shortQuote(s: string): string {
  const chars = [...s];
  if (chars.length <= maxQuotedLength) return goQuote(s);
  const rest = chars.length - maxQuotedLength;
  return `${goQuote(chars.slice(0, maxQuotedLength).join(""))}... (${rest} more characters)`;
}

/** True for a plain mapping (not a list, a date, bytes or null). */
export function isMapping(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** How a wrongly-typed value reads in an error: `boolean true`, `string "80"`, `a list`. */
function describe(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value)) return "a list";
  if (isMapping(value)) return "a mapping";
  switch (typeof value) {
    case "string":
      return `string ${shortQuote(value)}`;
    case "number":
      return Number.isInteger(value) ? `integer ${value}` : `number ${value}`;
    case "boolean":
    case "bigint":
      return `${typeof value} ${value}`;
  }
  if (value instanceof Uint8Array) return "binary data";
  return `a ${Object.prototype.toString.call(value).slice(8, -1)}`;
}
