/**
 * kubelet's serving certificate helpers: the SANs from the node's addresses, the CSR template,
 * and the file-based manager reloading `--tls-cert-file`/`--tls-private-key-file`.
 * Mirrors kubelet's pkg/kubelet/certificate/kubelet_test.go.
 * @module
 */
import { deepStrictEqual as assertEquals, ok as assert, rejects } from "node:assert/strict";
import { join } from "node:path";
import type { NodeAddress } from "../../../src/api/core/v1/mod.ts";
import {
  addressesToHostnamesAndIPs,
  newGetTemplateFn,
  newKubeletServerCertificateDynamicFileManager,
} from "../../../src/kubelet/certificate/kubelet.ts";
import type { TlsCertificate } from "../../../src/kubelet/certificate/certificate_store.ts";
import { generateSelfSignedCertKey } from "../../../src/util/cert/cert.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { setLogSink } from "../../../src/util/log.ts";

Deno.test("TestAddressesToHostnamesAndIPs", async (t) => {
  const cases: [string, NodeAddress[], string[], string[]][] = [
    ["empty", [], [], []],
    ["ignore empty values", [{ type: "Hostname", address: "" }], [], []],
    [
      "ignore invalid IPs",
      [
        { type: "InternalIP", address: "1.2" },
        { type: "ExternalIP", address: "3.4" },
      ],
      [],
      [],
    ],
    [
      "dedupe values",
      [
        { type: "Hostname", address: "hostname" },
        { type: "ExternalDNS", address: "hostname" },
        { type: "InternalDNS", address: "hostname" },
        { type: "InternalIP", address: "1.1.1.1" },
        { type: "ExternalIP", address: "1.1.1.1" },
      ],
      ["hostname"],
      ["1.1.1.1"],
    ],
    [
      "order values",
      [
        { type: "Hostname", address: "hostname-2" },
        { type: "ExternalDNS", address: "hostname-1" },
        { type: "InternalDNS", address: "hostname-3" },
        { type: "InternalIP", address: "2.2.2.2" },
        { type: "ExternalIP", address: "1.1.1.1" },
        { type: "InternalIP", address: "3.3.3.3" },
      ],
      ["hostname-1", "hostname-2", "hostname-3"],
      ["1.1.1.1", "2.2.2.2", "3.3.3.3"],
    ],
    [
      "handle IP and DNS hostnames",
      [
        { type: "Hostname", address: "hostname" },
        { type: "Hostname", address: "1.1.1.1" },
      ],
      ["hostname"],
      ["1.1.1.1"],
    ],
    ["IPv6 in Go's form", [{ type: "InternalIP", address: "fd00:0:0::0001" }], [], ["fd00::1"]],
  ];
  for (const [name, addresses, dnsNames, ips] of cases) {
    await t.step(name, () => {
      assertEquals(addressesToHostnamesAndIPs(addresses), { dnsNames, ips });
    });
  }
});

Deno.test("TestNewCertificateManagerConfigGetTemplate", async (t) => {
  const nodeName = "fake-node";
  // v1.36: AllowDNSOnlyNodeCSR is off, so a template needs an IP address.
  const cases: [string, NodeAddress[], unknown][] = [
    ["no node addresses", [], undefined],
    ["only hostnames", [{ type: "Hostname", address: nodeName }], undefined],
    ["only IP addresses", [{ type: "InternalIP", address: "192.168.1.1" }], {
      commonName: `system:node:${nodeName}`,
      organizations: ["system:nodes"],
      dnsNames: [],
      ipAddresses: ["192.168.1.1"],
    }],
    ["IP addresses and hostnames", [
      { type: "Hostname", address: nodeName },
      { type: "InternalIP", address: "192.168.1.1" },
    ], {
      commonName: `system:node:${nodeName}`,
      organizations: ["system:nodes"],
      dnsNames: [nodeName],
      ipAddresses: ["192.168.1.1"],
    }],
  ];
  for (const [name, addresses, want] of cases) {
    await t.step(name, () => {
      assertEquals(newGetTemplateFn(nodeName, () => addresses)(), want);
    });
  }
});

Deno.test("TestKubeletServerCertificateFromFiles", async (t) => {
  const previous = setLogSink(() => {});
  const dir = await Deno.makeTempDir();
  const certFile = join(dir, "kubelet.cert");
  const keyFile = join(dir, "kubelet.key");
  const first = await generateSelfSignedCertKey("k8s.io");
  const second = await generateSelfSignedCertKey("k8s.io");
  await Deno.writeTextFile(certFile, first.certPem);
  await Deno.writeTextFile(keyFile, first.keyPem);
  const clock = new FakeClock(Date.now());
  const loaded: TlsCertificate[] = [];
  let changed = Promise.withResolvers<void>();
  const m = await newKubeletServerCertificateDynamicFileManager(certFile, keyFile, {
    clock,
    onCertificate: (c) => {
      loaded.push(c);
      changed.resolve();
    },
  });
  try {
    await t.step("the files are served from the start", () => {
      assertEquals(loaded.length, 1);
      assertEquals(m.current()?.certPem, first.certPem.replace(/\n+$/, "\n"));
    });
    m.start();
    await t.step("a rewrite is picked up (file event)", async () => {
      changed = Promise.withResolvers<void>();
      await Deno.writeTextFile(certFile, second.certPem);
      await Deno.writeTextFile(keyFile, second.keyPem);
      await changed.promise;
      assertEquals(m.current()?.keyPem, loaded.at(-1)?.keyPem);
      assert(m.current()?.certPem.startsWith(second.certPem.slice(0, 200)));
    });
    await t.step("a half-written pair keeps the last good one", async () => {
      const before = m.current();
      await Deno.writeTextFile(certFile, first.certPem); // the key is still the second one
      await m.reload();
      assertEquals(m.current(), before);
    });
    await t.step("the pair is served once the key catches up", async () => {
      changed = Promise.withResolvers<void>();
      await Deno.writeTextFile(keyFile, first.keyPem);
      // A file event or, at the latest, the minute's resync on the clock.
      await clock.step(60_000);
      await changed.promise;
      assert(m.current()?.certPem.startsWith(first.certPem.slice(0, 200)));
    });
    await t.step("a pair replaced by renaming its folder's files is picked up", async () => {
      changed = Promise.withResolvers<void>();
      const third = await generateSelfSignedCertKey("k8s.io");
      await Deno.writeTextFile(certFile + ".tmp", third.certPem);
      await Deno.writeTextFile(keyFile + ".tmp", third.keyPem);
      await Deno.rename(certFile + ".tmp", certFile);
      await Deno.rename(keyFile + ".tmp", keyFile);
      for (;;) {
        await changed.promise;
        if (m.current()?.certPem.startsWith(third.certPem.slice(0, 200))) break;
        changed = Promise.withResolvers<void>();
      }
    });
  } finally {
    await m.stop();
    assertEquals(clock.pendingTimers(), 0);
    setLogSink(previous);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestKubeletServerCertificateFromFiles refuses a bad pair at start", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const a = await generateSelfSignedCertKey("a");
    const b = await generateSelfSignedCertKey("b");
    await Deno.writeTextFile(join(dir, "c"), a.certPem);
    await Deno.writeTextFile(join(dir, "k"), b.keyPem);
    await rejects(
      newKubeletServerCertificateDynamicFileManager(join(dir, "c"), join(dir, "k"), {
        clock: new FakeClock(0),
      }),
      {
        message: "unable to set up dynamic certificate manager for kubelet server cert files: " +
          "tls: private key does not match public key",
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
