/**
 * Command-line flags of the node agent, with kubelet's flag names where kubelet has the flag.
 * Parsing follows pflag's conventions (`--name=value`, `--name value`, `-v=4`, booleans without a
 * value) and its error texts (`unknown flag: --foo`, `invalid argument "x" for "--port" flag: ...`).
 * Mirrors the flag part of kubelet's cmd/kubelet/app/options.
 * @module
 */

/** The parsed configuration of one run. */
export interface KubeletFlags {
  /** Folder (or file) of static pod manifests. */
  podManifestPath: string;
  /** `unix:///path/to/socket` of a CRI runtime; empty = the embedded runtime. */
  containerRuntimeEndpoint: string;
  /** Name this node reports. */
  nodeName: string;
  /** Where the agent keeps its state (logs of containers, the embedded runtime's files). */
  rootDir: string;
  /** Log verbosity, klog's `-v`. */
  verbosity: number;
  /** Address the HTTP server listens on. */
  address: string;
  /** Port of the HTTP server (0 = a free port chosen at start). */
  port: number;
  /** Timeout of every runtime call except long-running ones, in milliseconds. */
  runtimeRequestTimeoutMs: number;
  /** Period of the pod resync, in milliseconds. */
  syncFrequencyMs: number;
  /** How often the manifest folder is checked for changes, in milliseconds. */
  fileCheckFrequencyMs: number;
  /** Live view on the terminal: `auto` (when stdout is a TTY), `always` or `never`. */
  liveView: "auto" | "always" | "never";
  /** Size at which a container's log is rotated (`--container-log-max-size`), in bytes. */
  containerLogMaxSizeBytes: number;
  /** Log files kept per container, the current one included (`--container-log-max-files`). */
  containerLogMaxFiles: number;
  /** `--help` was given. */
  help: boolean;
  /** `--version` was given. */
  version: boolean;
}

/** A command-line error; the CLI prints it with a usage hint and exits with code 2. */
export class FlagError extends Error {
  /** Creates the error with pflag's message. */
  constructor(message: string) {
    super(message);
    this.name = "FlagError";
  }
}

type FlagKind = "string" | "int" | "duration" | "bool" | "enum" | "quantity";

interface FlagDef {
  name: string;
  kind: FlagKind;
  key: keyof KubeletFlags;
  usage: string;
  defaultText: string;
  aliases?: string[];
  values?: string[];
  /** A duration that must be greater than zero (a zero period would busy-loop). */
  positive?: boolean;
}

const flagDefs: FlagDef[] = [
  {
    name: "pod-manifest-path",
    kind: "string",
    key: "podManifestPath",
    usage: "Path to the directory (or file) of static pod manifests to run. Watched for changes.",
    defaultText: "",
  },
  {
    name: "container-runtime-endpoint",
    kind: "string",
    key: "containerRuntimeEndpoint",
    usage: "CRI endpoint, e.g. unix:///run/containerd/containerd.sock. " +
      "Empty: the embedded runtime (host processes, pod IP 127.0.0.1).",
    defaultText: "",
  },
  {
    name: "node-name",
    kind: "string",
    key: "nodeName",
    usage: "Name of this node.",
    defaultText: "hostname",
    aliases: ["hostname-override"],
  },
  {
    name: "root-dir",
    kind: "string",
    key: "rootDir",
    usage: "Directory for the agent's files (container logs, embedded runtime state).",
    defaultText: ".run/probelet",
  },
  {
    name: "v",
    kind: "int",
    key: "verbosity",
    usage: "Log level verbosity (klog -v).",
    defaultText: "0",
  },
  {
    name: "address",
    kind: "string",
    key: "address",
    usage: "IP address the HTTP server serves on.",
    defaultText: "127.0.0.1",
  },
  {
    name: "port",
    kind: "int",
    key: "port",
    usage:
      "Port of the HTTP server (/healthz, /pods, /events, /metrics/probes); 0 picks a free one.",
    defaultText: "10255",
  },
  {
    name: "runtime-request-timeout",
    kind: "duration",
    key: "runtimeRequestTimeoutMs",
    usage: "Timeout of every runtime request except exec (which adds the probe's timeout).",
    defaultText: "2m0s",
  },
  {
    name: "sync-frequency",
    kind: "duration",
    positive: true,
    key: "syncFrequencyMs",
    usage: "Period of the pod resync (kubelet's default is 1m; the agent syncs every second).",
    defaultText: "1s",
  },
  {
    name: "file-check-frequency",
    kind: "duration",
    positive: true,
    key: "fileCheckFrequencyMs",
    usage: "Period of the manifest folder check, on top of file system notifications.",
    defaultText: "20s",
  },
  {
    name: "live-view",
    kind: "enum",
    key: "liveView",
    usage: "Table of pods refreshed in place: auto (when stdout is a terminal), always, never.",
    defaultText: "auto",
    values: ["auto", "always", "never"],
  },
  {
    name: "container-log-max-size",
    kind: "quantity",
    key: "containerLogMaxSizeBytes",
    usage: "Size at which a container's log file is rotated (a quantity: 10Mi, 500Ki, 1G). " +
      "Embedded runtime only; on a CRI runtime it is the runtime's setting.",
    defaultText: "10Mi",
  },
  {
    name: "container-log-max-files",
    kind: "int",
    key: "containerLogMaxFiles",
    usage: "Most log files kept per container, the current one included; must be at least 2.",
    defaultText: "5",
  },
  { name: "help", kind: "bool", key: "help", usage: "Print this help.", defaultText: "false" },
  {
    name: "version",
    kind: "bool",
    key: "version",
    usage: "Print the version and exit.",
    defaultText: "false",
  },
];

/** Defaults of every flag (`nodeName` resolved from the hostname). */
export function defaultFlags(): KubeletFlags {
  let hostname = "localhost";
  try {
    hostname = Deno.hostname();
  } catch {
    // Keep the fallback when the permission is missing.
  }
  return {
    podManifestPath: "",
    containerRuntimeEndpoint: "",
    nodeName: hostname.toLowerCase(),
    rootDir: ".run/probelet",
    verbosity: 0,
    address: "127.0.0.1",
    port: 10255,
    runtimeRequestTimeoutMs: 120_000,
    syncFrequencyMs: 1000,
    fileCheckFrequencyMs: 20_000,
    liveView: "auto",
    containerLogMaxSizeBytes: 10 * 1024 * 1024,
    containerLogMaxFiles: 5,
    help: false,
    version: false,
  };
}

/**
 * Parses the command line. Throws {@linkcode FlagError} naming the flag on an unknown flag, a
 * missing value, a bad number or duration, or a positional argument.
 *
 * @example
 * ```ts
 * const flags = parseFlags(["--pod-manifest-path", "fixtures/pods/host", "--v=4"]);
 * flags.verbosity; // 4
 * ```
 */
export function parseFlags(args: string[]): KubeletFlags {
  const flags = defaultFlags();
  const values = flags as unknown as Record<string, unknown>;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      if (i + 1 < args.length) throw new FlagError(`unexpected argument "${args[i + 1]}"`);
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      throw new FlagError(`unexpected argument "${arg}"`);
    }
    const body = arg.replace(/^--?/, "");
    const eq = body.indexOf("=");
    const name = eq >= 0 ? body.slice(0, eq) : body;
    let value = eq >= 0 ? body.slice(eq + 1) : undefined;
    const def = name === "h" ? flagDefs.find((d) => d.name === "help") : findFlag(name);
    if (!def) {
      throw new FlagError(
        arg.startsWith("--")
          ? `unknown flag: --${name}`
          : `unknown shorthand flag: '${name}' in ${arg}`,
      );
    }
    const shown = `--${def.name}`;
    if (def.kind === "bool") {
      if (value === undefined) values[def.key] = true;
      else if (["true", "1", "t", "T", "TRUE", "True"].includes(value)) values[def.key] = true;
      else if (["false", "0", "f", "F", "FALSE", "False"].includes(value)) values[def.key] = false;
      else {throw new FlagError(
          invalid(value, shown, `strconv.ParseBool: parsing "${value}": invalid syntax`),
        );}
      continue;
    }
    if (value === undefined) {
      if (i + 1 >= args.length) throw new FlagError(`flag needs an argument: ${shown}`);
      value = args[++i];
    }
    switch (def.kind) {
      case "string":
        values[def.key] = value;
        break;
      case "int": {
        if (!/^[+-]?\d+$/.test(value)) {
          throw new FlagError(
            invalid(value, shown, `strconv.ParseInt: parsing "${value}": invalid syntax`),
          );
        }
        const n = Number(value);
        if (def.name === "port" && (n < 0 || n > 65535)) {
          throw new FlagError(invalid(value, shown, "port must be between 0 and 65535"));
        }
        if (def.name === "v" && n < 0) {
          throw new FlagError(invalid(value, shown, "verbosity must not be negative"));
        }
        if (def.name === "container-log-max-files" && n < 2) {
          throw new FlagError(invalid(value, shown, "containerLogMaxFiles must be greater than 1"));
        }
        values[def.key] = n;
        break;
      }
      case "duration": {
        const ms = parseGoDuration(value);
        if (ms === undefined) {
          throw new FlagError(invalid(value, shown, `time: invalid duration "${value}"`));
        }
        if (def.positive && ms <= 0) {
          throw new FlagError(invalid(value, shown, "duration must be greater than 0"));
        }
        if (ms < 0) throw new FlagError(invalid(value, shown, "duration must not be negative"));
        values[def.key] = ms;
        break;
      }
      case "quantity": {
        const bytes = parseQuantityBytes(value);
        if (bytes === undefined) {
          throw new FlagError(
            invalid(
              value,
              shown,
              "quantities must match the regular expression " +
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            ),
          );
        }
        if (bytes < 1024) {
          throw new FlagError(invalid(value, shown, "containerLogMaxSize must be at least 1Ki"));
        }
        values[def.key] = bytes;
        break;
      }
      case "enum":
        if (!def.values!.includes(value)) {
          throw new FlagError(invalid(value, shown, `must be one of ${def.values!.join(", ")}`));
        }
        values[def.key] = value;
        break;
    }
  }
  return flags;
}

function findFlag(name: string): FlagDef | undefined {
  return flagDefs.find((d) => d.name === name || d.aliases?.includes(name));
}

function invalid(value: string, flag: string, why: string): string {
  return `invalid argument "${value}" for "${flag}" flag: ${why}`;
}

const unitMs: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a Go duration (`1m30s`, `500ms`, `2h`, `0`) into milliseconds; undefined when malformed.
 *
 * @example
 * ```ts
 * parseGoDuration("1m30s"); // 90000
 * ```
 */
export function parseGoDuration(text: string): number | undefined {
  let s = text;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    if (s[0] === "-") sign = -1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") return undefined;
  let total = 0;
  const re = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/;
  while (s.length > 0) {
    const m = re.exec(s);
    if (!m) return undefined;
    total += Number(m[1]) * unitMs[m[2]];
    s = s.slice(m[0].length);
  }
  return sign * total;
}

const quantitySuffix: Record<string, number> = {
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

/**
 * Parses a byte quantity as Kubernetes' resource.Quantity writes it (`10Mi`, `500k`, `1.5Gi`,
 * `2048`) into whole bytes; undefined when malformed.
 *
 * @example
 * ```ts
 * parseQuantityBytes("10Mi"); // 10485760
 * ```
 */
export function parseQuantityBytes(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(|k|M|G|T|Ki|Mi|Gi|Ti)$/.exec(text);
  if (!m) return undefined;
  return Math.ceil(Number(m[1]) * quantitySuffix[m[2]]);
}

/**
 * The `--help` text: usage line, then every flag with its default.
 *
 * @example
 * ```ts
 * console.log(usage());
 * ```
 */
export function usage(): string {
  const lines = [
    "probelet: a small node agent that runs static pods on a CRI runtime and keeps them healthy",
    "with kubelet's liveness, readiness and startup probes.",
    "",
    "Usage:",
    "  probelet --pod-manifest-path <dir> [flags]",
    "",
    "Flags:",
  ];
  for (const def of flagDefs) {
    const type = def.kind === "bool"
      ? ""
      : def.kind === "duration"
      ? " duration"
      : def.kind === "int"
      ? " int"
      : def.kind === "quantity"
      ? " quantity"
      : " string";
    const aliases = def.aliases ? ` (alias --${def.aliases.join(", --")})` : "";
    const head = `      --${def.name}${type}`;
    const dflt = def.kind === "bool"
      ? ""
      : ` (default ${def.defaultText === "" ? '""' : def.defaultText})`;
    lines.push(`${head.padEnd(40)}${def.usage}${dflt}${aliases}`);
  }
  lines.push(
    "",
    "Endpoints (http://<address>:<port>): /healthz, /pods, /events, /metrics/probes",
    "Exit codes: 0 after SIGINT/SIGTERM, 1 on a startup error, 2 on bad flags.",
  );
  return lines.join("\n");
}
