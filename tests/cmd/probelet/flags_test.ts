import { deepStrictEqual as assertEquals, ok as assert, throws } from "node:assert/strict";
import {
  defaultFlags,
  FlagError,
  parseFlags,
  parseGoDuration,
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
      "--port",
      "0",
      "--runtime-request-timeout=1m30s",
      "--hostname-override",
      "n2",
    ]);
    assertEquals(f.podManifestPath, "fixtures/pods/host");
    assertEquals(f.containerRuntimeEndpoint, "unix:///run/containerd/containerd.sock");
    assertEquals(f.nodeName, "n2");
    assertEquals(f.verbosity, 4);
    assertEquals(f.port, 0);
    assertEquals(f.runtimeRequestTimeoutMs, 90_000);
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
