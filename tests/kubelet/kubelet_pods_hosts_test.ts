/**
 * Tests of the managed /etc/hosts and the pod's host name, ported from kubelet's
 * pkg/kubelet/kubelet_pods_test.go (TestManagedHostsFileContent, TestNodeHostsFileContent,
 * TestTruncatePodHostname) and pkg/kubelet/util/util_test.go (TestGetNodenameForKernel).
 */
import { deepStrictEqual as assertEquals, throws as assertThrows } from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "../../src/api/core/v1/mod.ts";
import {
  ensureHostsFile,
  generatePodHostNameAndDomain,
  generateRunContainerOptions,
  managedHostsFileContent,
  nodeHostsFileContent,
  truncatePodHostnameIfNeeded,
} from "../../src/kubelet/kubelet_pods.ts";
import { getNodenameForKernel } from "../../src/kubelet/util/util.ts";
import * as log from "../../src/util/log.ts";

const localhostEntries = "127.0.0.1\tlocalhost\n" +
  "::1\tlocalhost ip6-localhost ip6-loopback\n" +
  "fe00::0\tip6-localnet\n" +
  "fe00::0\tip6-mcastprefix\n" +
  "fe00::1\tip6-allnodes\n" +
  "fe00::2\tip6-allrouters\n";

Deno.test("TestManagedHostsFileContent", async (t) => {
  await t.step("one IP, no domain", () => {
    assertEquals(
      managedHostsFileContent(["123.45.67.89"], "podFoo", "", []),
      "# Kubernetes-managed hosts file.\n" + localhostEntries + "123.45.67.89\tpodFoo\n",
    );
  });
  await t.step("dual stack with a domain", () => {
    assertEquals(
      managedHostsFileContent(["203.0.113.1", "fd00::6"], "podFoo", "domainFoo", []),
      "# Kubernetes-managed hosts file.\n" + localhostEntries +
        "203.0.113.1\tpodFoo.domainFoo\tpodFoo\n" +
        "fd00::6\tpodFoo.domainFoo\tpodFoo\n",
    );
  });
  await t.step("host aliases, each IP on one line", () => {
    assertEquals(
      managedHostsFileContent(["12.34.56.78"], "podFoo", "", [
        { ip: "123.45.67.89", hostnames: ["foo", "bar", "baz"] },
        { ip: "456.78.90.123", hostnames: ["park", "doo", "boo"] },
      ]),
      "# Kubernetes-managed hosts file.\n" + localhostEntries + "12.34.56.78\tpodFoo\n" +
        "\n# Entries added by HostAliases.\n" +
        "123.45.67.89\tfoo\tbar\tbaz\n" +
        "456.78.90.123\tpark\tdoo\tboo\n",
    );
  });
});

Deno.test("TestNodeHostsFileContent", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    const nodeHosts = join(dir, "hosts");
    const node = "# hosts file for testing.\n127.0.0.1\tlocalhost\n123.45.67.89\tsome.domain\n";
    await Deno.writeTextFile(nodeHosts, node);
    await t.step("the node's file after the host-network header", async () => {
      assertEquals(
        await nodeHostsFileContent(nodeHosts, []),
        "# Kubernetes-managed hosts file (host network).\n" + node,
      );
    });
    await t.step("with host aliases", async () => {
      assertEquals(
        await nodeHostsFileContent(nodeHosts, [{ ip: "1.2.3.4", hostnames: ["a", "b"] }]),
        "# Kubernetes-managed hosts file (host network).\n" + node +
          "\n# Entries added by HostAliases.\n1.2.3.4\ta\tb\n",
      );
    });
    await t.step("ensureHostsFile writes 0644, host network or not", async () => {
      const out = join(dir, "etc-hosts");
      await ensureHostsFile(out, {
        hostIPs: ["10.0.0.5"],
        hostName: "p",
        hostDomainName: "",
        useHostNetwork: true,
        nodeHostsFile: nodeHosts,
      });
      assertEquals(await Deno.readTextFile(out), await nodeHostsFileContent(nodeHosts, []));
      assertEquals((await Deno.stat(out)).mode! & 0o777, 0o644);
      await ensureHostsFile(out, {
        hostIPs: ["10.0.0.5"],
        hostName: "p",
        hostDomainName: "",
        useHostNetwork: false,
      });
      assertEquals(
        await Deno.readTextFile(out),
        managedHostsFileContent(["10.0.0.5"], "p", "", []),
      );
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestTruncatePodHostname", async (t) => {
  const previous = log.setLogSink(() => {});
  try {
    const cases: [string, string, string][] = [
      ["short", "test", "test"],
      [
        "63 characters",
        "1234567.1234567.1234567.1234567.1234567.1234567.1234567.1234567",
        "1234567.1234567.1234567.1234567.1234567.1234567.1234567.1234567",
      ],
      [
        "cut at 63",
        "1234567.1234567.1234567.1234567.1234567.1234567.1234567.12345678",
        "1234567.1234567.1234567.1234567.1234567.1234567.1234567.1234567",
      ],
      [
        "cut, trailing dot removed",
        "1234567.1234567.1234567.1234567.1234567.1234567.123456.1234567.x",
        "1234567.1234567.1234567.1234567.1234567.1234567.123456.1234567",
      ],
      [
        "cut, trailing dash removed",
        "1234567.1234567.1234567.1234567.1234567.1234567.1234567-123456-x",
        "1234567.1234567.1234567.1234567.1234567.1234567.1234567-123456",
      ],
    ];
    for (const [name, hostname, want] of cases) {
      await t.step(name, () => assertEquals(truncatePodHostnameIfNeeded("pod", hostname), want));
    }
  } finally {
    log.setLogSink(previous);
  }
});

Deno.test("TestGeneratePodHostNameAndDomain", async (t) => {
  const pod = (spec: Partial<Pod["spec"]>): Pod => ({
    metadata: { name: "web-0", namespace: "shop" },
    spec: { containers: [], ...spec },
  });
  await t.step("the pod's name without a hostname", () => {
    assertEquals(generatePodHostNameAndDomain(pod({}), "cluster.local"), {
      hostname: "web-0",
      hostDomain: "",
    });
  });
  await t.step("hostname and subdomain", () => {
    assertEquals(
      generatePodHostNameAndDomain(pod({ hostname: "db", subdomain: "sub" }), "cluster.local"),
      { hostname: "db", hostDomain: "sub.shop.svc.cluster.local" },
    );
  });
  await t.step("an invalid hostname is an error", () => {
    assertThrows(
      () => generatePodHostNameAndDomain(pod({ hostname: "Not_valid" }), ""),
      /pod Hostname "Not_valid" is not a valid DNS label: /,
    );
  });
});

Deno.test("TestGetNodenameForKernel", async (t) => {
  await t.step("short name without setHostnameAsFQDN", () => {
    assertEquals(getNodenameForKernel("test", "", false), "test");
    assertEquals(getNodenameForKernel("test", "sub.ns.svc.cluster.local", undefined), "test");
  });
  await t.step("FQDN with setHostnameAsFQDN and a domain", () => {
    assertEquals(
      getNodenameForKernel("test", "sub.ns.svc.cluster.local", true),
      "test.sub.ns.svc.cluster.local",
    );
    assertEquals(getNodenameForKernel("test", "", true), "test");
  });
  await t.step("an FQDN over 64 characters is an error", () => {
    assertThrows(
      () => getNodenameForKernel("a".repeat(40), "b".repeat(30), true),
      /FQDN a+\.b+ is too long \(64 characters is the max, 71 characters requested\)/,
    );
  });
});

Deno.test("TestGenerateRunContainerOptions", async (t) => {
  const podsDir = await Deno.makeTempDir();
  try {
    const pod: Pod = {
      metadata: { name: "web", namespace: "ns", uid: "u1" },
      spec: { containers: [], hostAliases: [{ ip: "10.1.1.1", hostnames: ["x"] }] },
    };
    await t.step("a pod with an IP: the hosts file mounted, the message folder made", async () => {
      const opts = await generateRunContainerOptions(pod, {
        name: "app",
        terminationMessagePath: "/dev/termination-log",
      }, { podsDir, podIPs: ["10.88.0.5"], clusterDomain: "" });
      assertEquals(opts.mounts, [{
        hostPath: join(podsDir, "u1", "etc-hosts"),
        containerPath: "/etc/hosts",
        readonly: false,
      }]);
      assertEquals(
        await Deno.readTextFile(join(podsDir, "u1", "etc-hosts")),
        managedHostsFileContent(["10.88.0.5"], "web", "", pod.spec.hostAliases),
      );
      assertEquals(opts.podContainerDir, join(podsDir, "u1", "containers", "app"));
      assertEquals((await Deno.stat(opts.podContainerDir)).isDirectory, true);
    });
    await t.step("no IP yet, no message path: nothing", async () => {
      assertEquals(
        await generateRunContainerOptions(pod, { name: "app" }, {
          podsDir,
          podIPs: [],
          clusterDomain: "",
        }),
        { mounts: [], podContainerDir: "" },
      );
    });
  } finally {
    await Deno.remove(podsDir, { recursive: true });
  }
});
