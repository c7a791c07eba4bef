import { deepStrictEqual as assertEquals, ok as assert, throws } from "node:assert/strict";
import {
  defaultFlags,
  FlagError,
  parseFlags,
  parseGoDuration,
  parseNodeIP,
  parseQuantityBytes,
  usage,
} from "../../../src/cmd/probelet/flags.ts";

Deno.test("TestParseFlags", async (t) => {
  await t.step("defaults", () => {
    const f = parseFlags([]);
    assertEquals(f.rootDir, ".run/probelet");
    assertEquals(f.address, "127.0.0.1");
    assertEquals(f.port, 10255);
    assert(f.port < 32768);
    assertEquals(f.runtimeRequestTimeoutMs, 120_000);
    assertEquals(f.containerRuntimeEndpoint, "");
    assertEquals(f.nodeName, defaultFlags().nodeName);
  });
  await t.step("kubelet's spellings", () => {
    const f = parseFlags([
      "--pod-manifest-path",
      "fixtures/pods/host",
      "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
      "--node-name=n1",
      "-v=4",
      "--read-only-port",
      "0",
      "--port=10251",
      "--runtime-request-timeout=1m30s",
      "--hostname-override",
      "n2",
    ]);
    assertEquals(f.podManifestPath, "fixtures/pods/host");
    assertEquals(f.containerRuntimeEndpoint, "unix:///run/containerd/containerd.sock");
    assertEquals(f.nodeName, "n2");
    assertEquals(f.verbosity, 4);
    // kubelet's --read-only-port 0 serves no read-only port (runKubelet's port -1).
    assertEquals(f.port, -1);
    assertEquals(f.securePort, 10251);
    assertEquals(f.runtimeRequestTimeoutMs, 90_000);
  });
  await t.step("secure port TLS flags", () => {
    const f = parseFlags([
      "--rotate-server-certificates",
      "--cert-dir=/var/lib/probelet/pki",
      "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
      "--tls-cipher-suites",
      "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
      "--tls-min-version=VersionTLS13",
      "--read-only-port=10255",
    ]);
    assertEquals(f.rotateServerCertificates, true);
    assertEquals(f.certDir, "/var/lib/probelet/pki");
    // pflag's StringSlice: a repeated flag appends.
    assertEquals(f.tlsCipherSuites, [
      "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
      "TLS_AES_128_GCM_SHA256",
      "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    ]);
    assertEquals(f.tlsMinVersion, "VersionTLS13");
    assertEquals(f.port, 10255);
    const d = parseFlags([]);
    assertEquals([d.rotateServerCertificates, d.tlsCipherSuites, d.tlsMinVersion, d.certDir], [
      false,
      [],
      "",
      "",
    ]);
  });
  await t.step("booleans", () => {
    assertEquals(parseFlags(["--help"]).help, true);
    assertEquals(parseFlags(["-h"]).help, true);
    assertEquals(parseFlags(["--help=false"]).help, false);
  });
  const errors: [string[], string][] = [
    [["--bogus"], "unknown flag: --bogus"],
    [["-x"], "unknown shorthand flag: 'x' in -x"],
    [
      ["--port", "abc"],
      'invalid argument "abc" for "--port" flag: strconv.ParseInt: parsing "abc": invalid syntax',
    ],
    [
      ["--port=70000"],
      'invalid argument "70000" for "--port" flag: port must be between 0 and 65535',
    ],
    [
      ["--v=loud"],
      'invalid argument "loud" for "--v" flag: strconv.ParseInt: parsing "loud": invalid syntax',
    ],
    [
      ["--runtime-request-timeout", "5"],
      'invalid argument "5" for "--runtime-request-timeout" flag: time: invalid duration "5"',
    ],
    [
      ["--live-view=sometimes"],
      'invalid argument "sometimes" for "--live-view" flag: must be one of auto, always, never',
    ],
    [
      ["--sync-frequency", "0"],
      'invalid argument "0" for "--sync-frequency" flag: duration must be greater than 0',
    ],
    [
      ["--file-check-frequency=0s"],
      'invalid argument "0s" for "--file-check-frequency" flag: duration must be greater than 0',
    ],
    [
      ["--sync-frequency=-1s"],
      'invalid argument "-1s" for "--sync-frequency" flag: duration must be greater than 0',
    ],
    [["--root-dir"], "flag needs an argument: --root-dir"],
    [["stray"], 'unexpected argument "stray"'],
    // `deno task start -- --help` hands the "--" through: say where the flags go.
    [
      ["--pod-manifest-path", "fixtures/pods/host", "--", "--help"],
      'unexpected argument "--help" after "--": flags go before it (deno task start --help)',
    ],
  ];
  for (const [args, message] of errors) {
    await t.step(`error: ${args.join(" ")}`, () => {
      throws(
        () => parseFlags(args),
        (e: unknown) => e instanceof FlagError && e.message === message,
      );
    });
  }
});

Deno.test("TestParseGoDuration", () => {
  assertEquals(parseGoDuration("0"), 0);
  assertEquals(parseGoDuration("1s"), 1000);
  assertEquals(parseGoDuration("2m0s"), 120_000);
  assertEquals(parseGoDuration("1.5s"), 1500);
  assertEquals(parseGoDuration("500ms"), 500);
  assertEquals(parseGoDuration("1h"), 3_600_000);
  assertEquals(parseGoDuration(""), undefined);
  assertEquals(parseGoDuration("10"), undefined);
  assertEquals(parseGoDuration("1x"), undefined);
});

Deno.test("TestUsageListsEveryFlag", () => {
  const text = usage();
  for (
    const flag of [
      "--pod-manifest-path",
      "--container-runtime-endpoint",
      "--node-name",
      "--root-dir",
      "--v",
      "--address",
      "--port",
      "--read-only-port",
      "--tls-cert-file",
      "--client-ca-file",
      "--authorization-mode",
      "--runtime-request-timeout",
      "--help",
    ]
  ) {
    assert(text.includes(flag), flag);
  }
});

Deno.test("TestMainExitCodes", async (t) => {
  const run = async (args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("../../../src/cmd/probelet/main.ts", import.meta.url).pathname,
        ...args,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      code: out.code,
      stdout: new TextDecoder().decode(out.stdout),
      stderr: new TextDecoder().decode(out.stderr),
    };
  };
  await t.step("unknown flag → 2, naming the flag", async () => {
    const r = await run(["--nope"]);
    assertEquals(r.code, 2);
    assert(r.stderr.includes("unknown flag: --nope"), r.stderr);
    assert(r.stderr.includes("probelet --help"), r.stderr);
  });
  await t.step("bad number → 2", async () => {
    const r = await run(["--port=eighty"]);
    assertEquals(r.code, 2);
    assert(r.stderr.includes('"--port"'), r.stderr);
  });
  await t.step("--help → 0 with usage", async () => {
    const r = await run(["--help"]);
    assertEquals(r.code, 0);
    assert(r.stdout.includes("--pod-manifest-path"));
  });
});

Deno.test("TestParseAPIServerModeFlags", async (t) => {
  await t.step("defaults: standalone, kubelet's values", () => {
    const f = parseFlags([]);
    assertEquals(f.kubeconfig, "");
    assertEquals(f.nodeIP, "");
    assertEquals(f.nodeLabels, {});
    assertEquals(f.registerNode, true);
    assertEquals(f.registerWithTaints, []);
    assertEquals(f.nodeStatusUpdateFrequencyMs, 10_000);
    assertEquals(f.nodeStatusReportFrequencyMs, 300_000);
    assertEquals(f.nodeLeaseDurationSeconds, 40);
    assertEquals(f.kubeAPIQPS, 50);
    assertEquals(f.kubeAPIBurst, 100);
    assertEquals(f.eventRecordQPS, 50);
    assertEquals(f.eventBurst, 100);
    assertEquals(f.maxPods, 110);
  });
  await t.step("every flag", () => {
    const f = parseFlags([
      "--kubeconfig=/etc/probelet/kubeconfig",
      "--node-ip",
      "10.0.0.5,fd00::5",
      "--node-labels",
      "probelet.io/agent=true, node.kubernetes.io/role = edge,plain=",
      "--register-node=false",
      "--register-with-taints=probelet.io/agent=true:NoExecute,dedicated:NoSchedule",
      "--node-status-update-frequency=20s",
      "--node-status-report-frequency=1m",
      "--node-lease-duration-seconds=60",
      "--kube-api-qps=0",
      "--kube-api-burst=7",
      "--event-qps=3",
      "--event-burst=4",
      "--max-pods=12",
    ]);
    assertEquals(f.kubeconfig, "/etc/probelet/kubeconfig");
    assertEquals(f.nodeIP, "10.0.0.5,fd00::5");
    assertEquals(f.nodeLabels, {
      "probelet.io/agent": "true",
      "node.kubernetes.io/role": "edge",
      plain: "",
    });
    assertEquals(f.registerNode, false);
    assertEquals(f.registerWithTaints, [
      { key: "probelet.io/agent", value: "true", effect: "NoExecute" },
      { key: "dedicated", effect: "NoSchedule" },
    ]);
    assertEquals(f.nodeStatusUpdateFrequencyMs, 20_000);
    assertEquals(f.nodeStatusReportFrequencyMs, 60_000);
    assertEquals(f.nodeLeaseDurationSeconds, 60);
    assertEquals(f.kubeAPIQPS, 0);
    assertEquals(f.kubeAPIBurst, 7);
    assertEquals(f.eventRecordQPS, 3);
    assertEquals(f.eventBurst, 4);
    assertEquals(f.maxPods, 12);
  });
  await t.step(
    "an update frequency alone also sets the report frequency (kubelet defaults)",
    () => {
      const f = parseFlags(["--node-status-update-frequency=4s"]);
      assertEquals(f.nodeStatusReportFrequencyMs, 4000);
    },
  );
  await t.step("parseNodeIP", () => {
    assertEquals(parseNodeIP(""), []);
    assertEquals(parseNodeIP("192.168.1.2"), ["192.168.1.2"]);
    assertEquals(parseNodeIP("fd00::5,10.0.0.5"), ["fd00::5", "10.0.0.5"]);
  });
  const errors: [string[], string][] = [
    [
      ["--node-labels=foo"],
      'invalid argument "foo" for "--node-labels" flag: malformed pair, expect string=string',
    ],
    [
      ["--node-labels=kubernetes.io/role=master"],
      'invalid argument "kubernetes.io/role=master" for "--node-labels" flag: unknown ' +
      "'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [kubernetes.io/role]; " +
      "--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix " +
      "(kubelet.kubernetes.io, node.kubernetes.io) or be in the specifically allowed set " +
      "(beta.kubernetes.io/arch, beta.kubernetes.io/instance-type, beta.kubernetes.io/os, " +
      "failure-domain.beta.kubernetes.io/region, failure-domain.beta.kubernetes.io/zone, " +
      "kubernetes.io/arch, kubernetes.io/hostname, kubernetes.io/os, " +
      "node.kubernetes.io/instance-type, topology.kubernetes.io/region, " +
      "topology.kubernetes.io/zone)",
    ],
    [
      ["--node-labels=a=b c"],
      `invalid argument "a=b c" for "--node-labels" flag: invalid node labels: 'b c' - a valid ` +
      "label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and " +
      "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or " +
      "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ],
    [
      ["--register-with-taints=foo=bar:NoExcute"],
      'invalid argument "foo=bar:NoExcute" for "--register-with-taints" flag: ' +
      "invalid taint effect: NoExcute, unsupported taint effect",
    ],
    [
      ["--register-with-taints=a=b=c:NoSchedule"],
      'invalid argument "a=b=c:NoSchedule" for "--register-with-taints" flag: ' +
      "invalid taint spec: a=b=c:NoSchedule",
    ],
    [
      ["--register-with-taints=dedicated"],
      'invalid argument "dedicated" for "--register-with-taints" flag: invalid taint spec: ' +
      "dedicated, an effect is required (NoSchedule, PreferNoSchedule or NoExecute)",
    ],
    [
      ["--register-with-taints=Bad_Prefix/x:NoSchedule"],
      'invalid argument "Bad_Prefix/x:NoSchedule" for "--register-with-taints" flag: ' +
      "invalid taint spec: Bad_Prefix/x:NoSchedule, prefix part a lowercase RFC 1123 subdomain " +
      "must consist of lower case alphanumeric characters, '-' or '.', and must start and end " +
      "with an alphanumeric character (e.g. 'example.com', regex used for validation is " +
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ],
    [
      ["--node-ip=10.0.0.300"],
      'invalid argument "10.0.0.300" for "--node-ip" flag: could not parse "10.0.0.300"',
    ],
    [
      ["--node-ip=10.0.0.1,10.0.0.2"],
      'invalid argument "10.0.0.1,10.0.0.2" for "--node-ip" flag: must contain either a single ' +
      "IP or a dual-stack pair of IPs",
    ],
    [
      ["--kube-api-qps=-1"],
      'invalid argument "-1" for "--kube-api-qps" flag: must not be a negative number',
    ],
    [
      ["--max-pods=many"],
      'invalid argument "many" for "--max-pods" flag: strconv.ParseInt: parsing "many": ' +
      "invalid syntax",
    ],
    [
      ["--node-lease-duration-seconds=0"],
      'invalid argument "0" for "--node-lease-duration-seconds" flag: must be greater than 0',
    ],
    [
      ["--node-status-update-frequency=0s"],
      'invalid argument "0s" for "--node-status-update-frequency" flag: duration must be ' +
      "greater than 0",
    ],
    [
      ["--event-burst=99999999999"],
      'invalid argument "99999999999" for "--event-burst" flag: strconv.ParseInt: parsing ' +
      '"99999999999": value out of range',
    ],
    [
      ["--register-node=maybe"],
      'invalid argument "maybe" for "--register-node" flag: ' +
      'strconv.ParseBool: parsing "maybe": invalid syntax',
    ],
  ];
  for (const [args, message] of errors) {
    await t.step(`error: ${args.join(" ")}`, () => {
      throws(
        () => parseFlags(args),
        (e: unknown) => {
          if (!(e instanceof FlagError)) return false;
          assertEquals(e.message, message);
          return true;
        },
      );
    });
  }
});

Deno.test("TestUsageDocumentsAPIServerMode", () => {
  const text = usage();
  for (
    const flag of [
      "--kubeconfig",
      "--node-ip",
      "--node-labels",
      "--register-node",
      "--register-with-taints",
      "--node-status-update-frequency",
      "--node-status-report-frequency",
      "--node-lease-duration-seconds",
      "--kube-api-qps",
      "--kube-api-burst",
      "--event-qps",
      "--event-burst",
      "--max-pods",
    ]
  ) {
    assert(text.includes(flag), flag);
  }
  assert(text.includes("changes do nothing on an existing Node"), "taints caveat");
  assert(text.includes("NodeRestriction"), "NodeRestriction named");
});

Deno.test("TestContainerLogFlags", async (t) => {
  await t.step("kubelet's defaults: 10Mi, 5 files", () => {
    const f = parseFlags([]);
    assertEquals(f.containerLogMaxSizeBytes, 10 * 1024 * 1024);
    assertEquals(f.containerLogMaxFiles, 5);
    assert(usage().includes("--container-log-max-size quantity"));
    assert(usage().includes("--container-log-max-files int"));
  });
  await t.step("quantities", () => {
    const f = parseFlags(["--container-log-max-size=512Ki", "--container-log-max-files", "2"]);
    assertEquals(f.containerLogMaxSizeBytes, 512 * 1024);
    assertEquals(f.containerLogMaxFiles, 2);
    assertEquals(parseQuantityBytes("1.5M"), 1_500_000);
    assertEquals(parseQuantityBytes("2048"), 2048);
    assertEquals(parseQuantityBytes("10MB"), undefined);
    // resource.ParseQuantity forms beyond a number and a binary/decimal suffix.
    assertEquals(parseFlags(["--container-log-max-size=1e6"]).containerLogMaxSizeBytes, 1_000_000);
    assertEquals(parseQuantityBytes("+2Ki"), 2048);
  });
  const errors: [string[], string][] = [
    [
      ["--container-log-max-files=1"],
      'invalid argument "1" for "--container-log-max-files" flag: ' +
      "containerLogMaxFiles must be greater than 1",
    ],
    [
      ["--container-log-max-size=100"],
      'invalid argument "100" for "--container-log-max-size" flag: ' +
      "containerLogMaxSize must be at least 1Ki",
    ],
    [
      ["--container-log-max-size=ten"],
      'invalid argument "ten" for "--container-log-max-size" flag: quantities must match the ' +
      "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ],
  ];
  for (const [args, message] of errors) {
    await t.step(`error: ${args.join(" ")}`, () => {
      throws(
        () => parseFlags(args),
        (e: unknown) => e instanceof FlagError && e.message === message,
      );
    });
  }
});

Deno.test("TestRestartSafetyFlags", () => {
  const d = parseFlags([]);
  assertEquals(d.syncFrequencyMs, 60_000);
  assertEquals(d.maxPerPodContainer, 1);
  assertEquals(d.minimumGCAgeMs, 0);
  // Unset: the runtime decides (embedded: stop, CRI: leave running).
  assertEquals(d.stopPodsOnExit, undefined);
  assertEquals(d.loggingFormat, "text");
  const f = parseFlags([
    "--stop-pods-on-exit=false",
    "--maximum-dead-containers-per-container=3",
    "--minimum-container-ttl-duration=1m",
    "--logging-format=json",
  ]);
  assertEquals(
    [f.stopPodsOnExit, f.maxPerPodContainer, f.minimumGCAgeMs, f.loggingFormat],
    [false, 3, 60_000, "json"],
  );
  assertEquals(parseFlags(["--stop-pods-on-exit"]).stopPodsOnExit, true);
  throws(() => parseFlags(["--logging-format=xml"]), FlagError);
  // --help says which behaviour is which.
  const help = usage();
  assert(help.includes("--stop-pods-on-exit"));
  assert(help.includes("true on the embedded runtime"));
  assert(help.includes("false with --container-runtime-endpoint"));
});

Deno.test("secure port flags: kubelet's names and defaults", async (t) => {
  await t.step("defaults: 10250, AlwaysAllow, anonymous off, kubelet's cache TTLs", () => {
    const f = parseFlags([]);
    assertEquals(
      [f.securePort, f.port, f.authorizationMode, f.anonymousAuth, f.authenticationTokenWebhook],
      [10250, 10255, "AlwaysAllow", false, false],
    );
    assertEquals(
      [
        f.authenticationTokenWebhookCacheTtlMs,
        f.authorizationWebhookCacheAuthorizedTtlMs,
        f.authorizationWebhookCacheUnauthorizedTtlMs,
      ],
      [120_000, 300_000, 30_000],
    );
  });
  await t.step("given", () => {
    const f = parseFlags([
      "--tls-cert-file=/c.crt",
      "--tls-private-key-file=/c.key",
      "--client-ca-file=/ca.crt",
      "--anonymous-auth=true",
      "--authentication-token-webhook",
      "--authentication-token-webhook-cache-ttl=10s",
      "--authorization-mode=Webhook",
      "--authorization-webhook-cache-authorized-ttl=1m",
      "--authorization-webhook-cache-unauthorized-ttl=5s",
    ]);
    assertEquals(
      [f.tlsCertFile, f.tlsPrivateKeyFile, f.clientCAFile, f.anonymousAuth],
      ["/c.crt", "/c.key", "/ca.crt", true],
    );
    assertEquals(
      [
        f.authenticationTokenWebhook,
        f.authenticationTokenWebhookCacheTtlMs,
        f.authorizationMode,
        f.authorizationWebhookCacheAuthorizedTtlMs,
        f.authorizationWebhookCacheUnauthorizedTtlMs,
      ],
      [true, 10_000, "Webhook", 60_000, 5_000],
    );
  });
  await t.step("an unknown authorization mode is refused", () => {
    throws(
      () => parseFlags(["--authorization-mode=RBAC"]),
      (e: Error) => e instanceof FlagError && e.message.includes("must be one of"),
    );
  });
});

Deno.test("TestEvictionHardFlag", async (t) => {
  await t.step("default: kubelet's Linux thresholds", () => {
    assertEquals(parseFlags([]).evictionHard, {
      "memory.available": "100Mi",
      "nodefs.available": "10%",
      "nodefs.inodesFree": "5%",
      "imagefs.available": "15%",
      "imagefs.inodesFree": "5%",
    });
  });
  await t.step("key<value pairs replace the default whole", () => {
    assertEquals(
      parseFlags(["--eviction-hard=memory.available<1Mi,nodefs.available<1%"]).evictionHard,
      { "memory.available": "1Mi", "nodefs.available": "1%" },
    );
  });
  await t.step("a malformed pair or an unknown signal names the flag", () => {
    throws(
      () => parseFlags(["--eviction-hard", "memory.available=1Mi"]),
      (e: Error) =>
        e instanceof FlagError &&
        e.message ===
          'invalid argument "memory.available=1Mi" for "--eviction-hard" flag: ' +
            "malformed pair, expect string<string",
    );
    throws(
      () => parseFlags(["--eviction-hard", "disk.available<1Gi"]),
      (e: Error) =>
        e instanceof FlagError && e.message.endsWith("unsupported eviction signal disk.available"),
    );
  });
});
