/**
 * Tests of pods' DNS configuration, ported from kubelet's pkg/kubelet/network/dns/dns_test.go.
 */
import {
  deepStrictEqual as assertEquals,
  ok as assert,
  throws as assertThrows,
} from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "../../../../src/api/core/v1/mod.ts";
import { FakeRecorder } from "../../../../src/kubelet/events/mod.ts";
import {
  appendDNSConfig,
  Configurer,
  type ConfigurerOptions,
  getPodDNSType,
  maxDNSSearchListChars,
  mergeDNSOptions,
  parseResolvConf,
} from "../../../../src/kubelet/network/dns/dns.ts";
import * as log from "../../../../src/util/log.ts";

const nodeRef = { kind: "Node", name: "node", uid: "node", namespace: "" };

function newConfigurer(options: Partial<ConfigurerOptions> = {}) {
  const recorder = new FakeRecorder();
  const configurer = new Configurer({
    recorder,
    nodeRef,
    nodeIPs: ["10.0.0.2"],
    clusterDNS: [],
    clusterDomain: "",
    resolverConfig: "",
    ...options,
  });
  return { configurer, recorder };
}

function testPod(spec: Partial<Pod["spec"]> = {}): Pod {
  return {
    metadata: { name: "pod", namespace: "ns", uid: "uid" },
    spec: { containers: [{ name: "app" }], ...spec },
  };
}

Deno.test("TestParseResolvConf", async (t) => {
  const cases: [string, string[], string[], string[]][] = [
    ["", [], [], []],
    [" ", [], [], []],
    ["\n", [], [], []],
    ["\t\n\t", [], [], []],
    ["#comment\n", [], [], []],
    [" #comment\n", [], [], []],
    ["#comment\n#comment", [], [], []],
    ["nameserver", [], [], []],
    ["nameserver 1.2.3.4", ["1.2.3.4"], [], []],
    [" nameserver 1.2.3.4", ["1.2.3.4"], [], []],
    ["\tnameserver 1.2.3.4", ["1.2.3.4"], [], []],
    ["nameserver\t1.2.3.4", ["1.2.3.4"], [], []],
    ["nameserver 1.2.3.4\nnameserver 5.6.7.8", ["1.2.3.4", "5.6.7.8"], [], []],
    ["nameserver 1.2.3.4 #comment", ["1.2.3.4"], [], []],
    ["search ", [], [], []],
    ["search .", [], [], []],
    ["search foo", [], ["foo"], []],
    ["search foo bar", [], ["foo", "bar"], []],
    ["search foo. bar", [], ["foo", "bar"], []],
    ["search foo bar bat\n", [], ["foo", "bar", "bat"], []],
    ["search foo\nsearch bar", [], ["bar"], []],
    ["nameserver 1.2.3.4\nsearch foo bar", ["1.2.3.4"], ["foo", "bar"], []],
    ["options ", [], [], []],
    ["options ndots:5 attempts:2", [], [], ["ndots:5", "attempts:2"]],
    ["options ndots:1\noptions ndots:5 attempts:3", [], [], ["ndots:5", "attempts:3"]],
    [
      "nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar\noptions ndots:5 attempts:4",
      ["1.2.3.4", "5.6.7.8"],
      ["bar"],
      ["ndots:5", "attempts:4"],
    ],
  ];
  for (const [text, nameservers, searches, options] of cases) {
    await t.step(JSON.stringify(text), () => {
      const got = parseResolvConf(text);
      // A trailing comment stays a field: kubelet reads the second field only.
      assertEquals(got, { nameservers, searches, options });
    });
  }
});

Deno.test("TestFormDNSSearchFitsLimits", async (t) => {
  const previous = log.setLogSink(() => {});
  try {
    const domain = (n: number, len: number) => `${String(n).padStart(len - 1, "a")}.`;
    const cases: { name: string; search: string[]; want: string[]; event: boolean }[] = [
      { name: "within limits", search: ["a.com", "b.com"], want: ["a.com", "b.com"], event: false },
      {
        name: "more than 32 paths",
        search: Array.from({ length: 33 }, (_, i) => `d${i}.com`),
        want: Array.from({ length: 32 }, (_, i) => `d${i}.com`),
        event: true,
      },
      {
        name: "a path over 253 characters is dropped",
        search: ["a.com", "x".repeat(254), "b.com"],
        want: ["a.com", "b.com"],
        event: true,
      },
      {
        name: "the line over 2048 characters loses its last paths",
        search: Array.from({ length: 9 }, (_, i) => domain(i, 250)),
        want: Array.from({ length: 8 }, (_, i) => domain(i, 250)),
        event: true,
      },
    ];
    for (const c of cases) {
      await t.step(c.name, () => {
        const { configurer, recorder } = newConfigurer();
        const got = configurer.formDNSConfigFitsLimits(
          { servers: [], searches: c.search, options: [] },
          testPod(),
        );
        assertEquals(got.searches, c.want);
        assert(got.searches.join(" ").length <= maxDNSSearchListChars);
        assertEquals(
          recorder.events,
          c.event
            ? [
              "Warning DNSConfigForming Search Line limits were exceeded, some search paths have " +
              `been omitted, the applied search line is: ${c.want.join(" ")}`,
            ]
            : [],
        );
      });
    }
  } finally {
    log.setLogSink(previous);
  }
});

Deno.test("TestFormDNSNameserversFitsLimits", () => {
  const previous = log.setLogSink(() => {});
  try {
    const { configurer, recorder } = newConfigurer();
    const got = configurer.formDNSConfigFitsLimits(
      { servers: ["1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"], searches: [], options: [] },
      testPod(),
    );
    assertEquals(got.servers, ["1.1.1.1", "2.2.2.2", "3.3.3.3"]);
    assertEquals(recorder.events, [
      "Warning DNSConfigForming Nameserver limits were exceeded, some nameservers have been " +
      "omitted, the applied nameserver line is: 1.1.1.1 2.2.2.2 3.3.3.3",
    ]);
  } finally {
    log.setLogSink(previous);
  }
});

Deno.test("TestMergeDNSOptions", async (t) => {
  await t.step("the pod's options replace the generated ones by name", () => {
    assertEquals(
      mergeDNSOptions(["ndots:5", "timeout:1", "edns0"], [
        { name: "ndots", value: "2" },
        { name: "attempts", value: "3" },
        { name: "single-request" },
      ]),
      ["ndots:2", "timeout:1", "edns0", "attempts:3", "single-request"],
    );
  });
  await t.step("appendDNSConfig: duplicates omitted", () => {
    assertEquals(
      appendDNSConfig({ servers: ["1.1.1.1"], searches: ["a"], options: ["ndots:5"] }, {
        nameservers: ["1.1.1.1", "2.2.2.2"],
        searches: ["a", "b"],
        options: [{ name: "ndots", value: "1" }],
      }),
      { servers: ["1.1.1.1", "2.2.2.2"], searches: ["a", "b"], options: ["ndots:1"] },
    );
  });
});

Deno.test("TestGetPodDNSType", async (t) => {
  const cases: [string, Partial<Pod["spec"]>, string | Error][] = [
    ["ClusterFirst", { dnsPolicy: "ClusterFirst" }, "cluster"],
    ["ClusterFirst, host network", { dnsPolicy: "ClusterFirst", hostNetwork: true }, "host"],
    [
      "ClusterFirstWithHostNet",
      { dnsPolicy: "ClusterFirstWithHostNet", hostNetwork: true },
      "cluster",
    ],
    ["Default", { dnsPolicy: "Default" }, "host"],
    ["None", { dnsPolicy: "None" }, "none"],
    ["invalid", { dnsPolicy: "Bogus" }, new Error("invalid DNSPolicy=Bogus")],
  ];
  for (const [name, spec, want] of cases) {
    await t.step(name, () => {
      if (want instanceof Error) assertThrows(() => getPodDNSType(testPod(spec)), want);
      else assertEquals(getPodDNSType(testPod(spec)), want);
    });
  }
});

Deno.test("TestGetPodDNS", async (t) => {
  const dir = await Deno.makeTempDir();
  const resolvConf = join(dir, "resolv.conf");
  await Deno.writeTextFile(
    resolvConf,
    "nameserver 192.168.0.1\nsearch host.example\noptions timeout:2\n",
  );
  const previous = log.setLogSink(() => {});
  try {
    await t.step("ClusterFirst with --cluster-dns: cluster nameservers and searches", async () => {
      const { configurer } = newConfigurer({
        clusterDNS: ["10.0.0.10"],
        clusterDomain: "cluster.local",
        resolverConfig: resolvConf,
      });
      assertEquals(await configurer.getPodDNS(testPod({ dnsPolicy: "ClusterFirst" })), {
        servers: ["10.0.0.10"],
        searches: ["ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "host.example"],
        options: ["ndots:5"],
      });
    });
    await t.step(
      "ClusterFirst without --cluster-dns: Default's, and MissingClusterDNS",
      async () => {
        const { configurer, recorder } = newConfigurer({ resolverConfig: resolvConf });
        assertEquals(await configurer.getPodDNS(testPod({ dnsPolicy: "ClusterFirst" })), {
          servers: ["192.168.0.1"],
          searches: ["host.example"],
          options: ["timeout:2"],
        });
        const message = "kubelet does not have ClusterDNS IP configured and cannot create Pod " +
          'using "ClusterFirst" policy. Falling back to "Default" policy.';
        assertEquals(recorder.events, [
          `Warning MissingClusterDNS ${message}`,
          `Warning MissingClusterDNS pod: "pod_ns(uid)". ${message}`,
        ]);
        assertEquals(recorder.refs.map((r) => r.kind), ["Node", "Pod"]);
      },
    );
    await t.step("Default without a resolver file: localhost, search .", async () => {
      const { configurer } = newConfigurer({ nodeIPs: ["10.0.0.2", "fd00::2"] });
      assertEquals(await configurer.getPodDNS(testPod({ dnsPolicy: "Default" })), {
        servers: ["127.0.0.1", "::1"],
        searches: ["."],
        options: [],
      });
    });
    await t.step("a missing resolver file is an error", async () => {
      const { configurer } = newConfigurer({ resolverConfig: join(dir, "missing") });
      let error: unknown;
      await configurer.getPodDNS(testPod()).catch((e) => error = e);
      assert(String(error).includes("failed to open DNS resolver config file"), String(error));
    });
  } finally {
    log.setLogSink(previous);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestGetPodDNSCustom", async (t) => {
  const dir = await Deno.makeTempDir();
  const resolvConf = join(dir, "resolv.conf");
  await Deno.writeTextFile(resolvConf, "nameserver 192.168.0.1\nsearch host.example\n");
  const dnsConfig = {
    nameservers: ["203.0.113.1"],
    searches: ["my.domain"],
    options: [{ name: "ndots", value: "3" }, { name: "debug" }],
  };
  try {
    const { configurer } = newConfigurer({
      clusterDNS: ["10.0.0.10"],
      clusterDomain: "cluster.local",
      resolverConfig: resolvConf,
    });
    await t.step("None: only the pod's dnsConfig", async () => {
      assertEquals(await configurer.getPodDNS(testPod({ dnsPolicy: "None", dnsConfig })), {
        servers: ["203.0.113.1"],
        searches: ["my.domain"],
        options: ["ndots:3", "debug"],
      });
    });
    await t.step("ClusterFirst with dnsConfig: appended and merged", async () => {
      assertEquals(await configurer.getPodDNS(testPod({ dnsPolicy: "ClusterFirst", dnsConfig })), {
        servers: ["10.0.0.10", "203.0.113.1"],
        searches: [
          "ns.svc.cluster.local",
          "svc.cluster.local",
          "cluster.local",
          "host.example",
          "my.domain",
        ],
        options: ["ndots:3", "debug"],
      });
    });
    await t.step("Default with dnsConfig", async () => {
      assertEquals(await configurer.getPodDNS(testPod({ dnsPolicy: "Default", dnsConfig })), {
        servers: ["192.168.0.1", "203.0.113.1"],
        searches: ["host.example", "my.domain"],
        options: ["ndots:3", "debug"],
      });
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
