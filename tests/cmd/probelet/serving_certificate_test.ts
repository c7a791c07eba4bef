/**
 * The secure port's certificate on a real TLS socket (127.0.0.1, port 0): with
 * `--rotate-server-certificates` no handshake succeeds before the CSR is issued, the issued
 * certificate (signed by the cluster CA) is served, the renewal at the deadline is served to new
 * connections without a restart, and an expired certificate without a successor fails the
 * handshake again; with `--tls-cert-file` a rewritten pair is served to new connections;
 * `--tls-min-version` and `--tls-cipher-suites` are checked with kubelet's texts.
 * Mirrors the TLS part of kubelet's cmd/kubelet/app/server.go (`InitializeTLS`) and
 * pkg/kubelet/kubelet.go (the serving certificate's `GetCertificate`).
 * @module
 */
import { deepStrictEqual as assertEquals, ok as assert, rejects } from "node:assert/strict";
import tls from "node:tls";
import { join } from "node:path";
import {
  initializeTLS,
  newServingCertificateManager,
  type TLSOptions,
} from "../../../src/cmd/probelet/auth.ts";
import { defaultFlags, type KubeletFlags } from "../../../src/cmd/probelet/flags.ts";
import {
  alwaysAllowAuthorizer,
  newDelegatingAuthenticator,
  newKubeletAuth,
} from "../../../src/kubelet/server/delegating_auth.ts";
import {
  type SecureKubeletServer,
  serveKubeletServer,
} from "../../../src/kubelet/server/server.ts";
import type { TlsVersionName } from "../../../src/util/flag/ciphersuites_flag.ts";
import { newCertificateAuthority } from "../../../src/util/cert/cert.ts";
import { FakeClock, settle } from "../../../src/util/clock.ts";
import { setLogSink } from "../../../src/util/log.ts";
import { FakeClientset } from "../../testing/fake_clientset.ts";
import { newTestSigner } from "../../testing/csr_signer.ts";

interface Peer {
  subject: string;
  issuer: string;
  serial: string;
  protocol: string;
}

// One TLS handshake with the server; the peer's certificate, or the handshake's error.
function handshake(
  port: number,
  options: { ca?: string; maxVersion?: TlsVersionName } = {},
): Promise<Peer> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: "127.0.0.1",
      port,
      ...(options.ca ? { ca: options.ca } : { rejectUnauthorized: false }),
      ...(options.maxVersion ? { maxVersion: options.maxVersion } : {}),
    }, () => {
      const c = socket.getPeerCertificate();
      resolve({
        subject: `O=${c.subject.O}, CN=${c.subject.CN}`,
        issuer: String(c.issuer.CN),
        serial: c.serialNumber,
        protocol: socket.getProtocol() ?? "",
      });
      socket.destroy();
    });
    socket.on("error", (e) => {
      socket.destroy();
      reject(e);
    });
  });
}

async function secureServer(minVersion?: TlsVersionName): Promise<SecureKubeletServer> {
  return await serveKubeletServer(undefined, {
    hostname: "127.0.0.1",
    port: 0,
    minVersion,
    auth: newKubeletAuth(
      newDelegatingAuthenticator([], { anonymous: true }),
      "node-1",
      alwaysAllowAuthorizer,
    ),
    requestClientCert: false,
  });
}

function flagsFor(dir: string, overrides: Partial<KubeletFlags> = {}): KubeletFlags {
  return { ...defaultFlags(), rootDir: dir, nodeName: "node-1", ...overrides };
}

Deno.test("TestServingCertificateThroughCSR", async (t) => {
  const previous = setLogSink(() => {});
  const dir = await Deno.makeTempDir();
  const start = Date.now();
  const clock = new FakeClock(start);
  const client = new FakeClientset();
  const signer = await newTestSigner(client);
  const server = await secureServer();
  let served = Promise.withResolvers<void>();
  const flags = flagsFor(dir, { rotateServerCertificates: true });
  const tlsOptions = await initializeTLS(flags);
  const m = await newServingCertificateManager(flags, tlsOptions, {
    clock,
    kubeClient: client,
    getAddresses: () => [
      { type: "InternalIP", address: "127.0.0.1" },
      { type: "Hostname", address: "node-1" },
    ],
    setCertificate: (c) => {
      server.setCertificate(c);
      served.resolve();
    },
  });
  const pending = async (n: number) => {
    const ready = () =>
      signer.requests().length >= n && client.tracker.watchCount("certificatesigningrequests") > 0;
    for (let i = 0; i < 1000 && !ready(); i++) await settle();
    assert(ready(), `request ${n} made and watched`);
    return signer.requests()[n - 1].metadata.name!;
  };
  try {
    await t.step("no self-signed pair is made", async () => {
      assertEquals([tlsOptions.certFile, tlsOptions.keyFile], ["", ""]);
      await rejects(Deno.stat(join(dir, "pki", "kubelet.crt")), Deno.errors.NotFound);
    });
    m.start();
    await t.step("until a certificate is issued, handshakes fail", async () => {
      const name = await pending(1);
      await rejects(handshake(server.port));
      assertEquals(m.current(), undefined);
      served = Promise.withResolvers<void>();
      await signer.issue(name, { notBefore: start - 1000, notAfter: start + 100_000 });
      await served.promise;
    });
    let first: Peer;
    await t.step("the issued certificate is served, verified against the cluster CA", async () => {
      first = await handshake(server.port, { ca: signer.ca.certPem });
      assertEquals(first.subject, "O=system:nodes, CN=system:node:node-1");
      assertEquals(first.issuer, "probelet-test-cluster-ca");
    });
    await t.step("at the deadline the renewal is served to new connections", async () => {
      // The deadline is 70–90 % of 101 s after notBefore; 91 s is past it.
      await clock.step(91_000);
      const name = await pending(2);
      served = Promise.withResolvers<void>();
      await signer.issue(name, { notBefore: clock.now(), notAfter: clock.now() + 100_000 });
      await served.promise;
      const second = await handshake(server.port);
      assertEquals(second.issuer, "probelet-test-cluster-ca");
      assert(second.serial !== first.serial, "a new certificate");
    });
    await t.step("an expired certificate without a successor fails the handshake", async () => {
      // Nobody approves the next request: at notAfter the certificate is dropped.
      served = Promise.withResolvers<void>();
      await clock.step(100_001);
      await served.promise;
      assertEquals(m.current(), undefined);
      await rejects(handshake(server.port));
    });
  } finally {
    await m.stop();
    await server.shutdown();
    setLogSink(previous);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestServingCertificateFromFiles", async () => {
  const previous = setLogSink(() => {});
  const dir = await Deno.makeTempDir();
  const ca = await newCertificateAuthority("files-ca");
  const a = await ca.sign({ commonName: "a" }, { usage: "server", ips: ["127.0.0.1"] });
  const b = await ca.sign({ commonName: "b" }, { usage: "server", ips: ["127.0.0.1"] });
  const certFile = join(dir, "tls.crt");
  const keyFile = join(dir, "tls.key");
  await Deno.writeTextFile(certFile, a.certPem);
  await Deno.writeTextFile(keyFile, a.keyPem);
  const server = await secureServer();
  const clock = new FakeClock(Date.now());
  let served = Promise.withResolvers<void>();
  const flags = flagsFor(dir, { tlsCertFile: certFile, tlsPrivateKeyFile: keyFile });
  const m = await newServingCertificateManager(flags, await initializeTLS(flags), {
    clock,
    setCertificate: (c) => {
      server.setCertificate(c);
      served.resolve();
    },
  });
  try {
    m.start();
    assertEquals((await handshake(server.port, { ca: ca.certPem })).subject.endsWith("CN=a"), true);
    served = Promise.withResolvers<void>();
    // Replaced as a tool would: a new file renamed over the old one, key first.
    await Deno.writeTextFile(keyFile + ".new", b.keyPem);
    await Deno.writeTextFile(certFile + ".new", b.certPem);
    await Deno.rename(keyFile + ".new", keyFile);
    await Deno.rename(certFile + ".new", certFile);
    for (;;) {
      await served.promise;
      if (m.current()?.leaf.commonName === "b") break;
      served = Promise.withResolvers<void>();
    }
    assertEquals((await handshake(server.port, { ca: ca.certPem })).subject.endsWith("CN=b"), true);
  } finally {
    await m.stop();
    await server.shutdown();
    setLogSink(previous);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestTLSMinVersion", async () => {
  const previous = setLogSink(() => {});
  const dir = await Deno.makeTempDir();
  const server = await secureServer("TLSv1.3");
  try {
    const flags = flagsFor(dir, { tlsMinVersion: "VersionTLS13" });
    const tlsOptions: TLSOptions = await initializeTLS(flags);
    assertEquals(tlsOptions.minVersion, "TLSv1.3");
    const m = await newServingCertificateManager(flags, tlsOptions, {
      clock: new FakeClock(Date.now()),
      setCertificate: (c) => server.setCertificate(c),
    });
    assertEquals((await handshake(server.port)).protocol, "TLSv1.3");
    await rejects(handshake(server.port, { maxVersion: "TLSv1.2" }));
    await m.stop();
  } finally {
    await server.shutdown();
    setLogSink(previous);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestInitializeTLSFlags", async (t) => {
  const previous = setLogSink(() => {});
  const dir = await Deno.makeTempDir();
  try {
    await t.step("an unknown cipher suite is refused with kubelet's text", async () => {
      await rejects(
        initializeTLS(flagsFor(dir, {
          rotateServerCertificates: true,
          tlsCipherSuites: ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_RC5"],
        })),
        {
          message:
            "failed to construct kubelet dependencies: Cipher suite TLS_RC5 not supported or " +
            "doesn't exist",
        },
      );
    });
    await t.step("an unknown version is refused with kubelet's text", async () => {
      await rejects(
        initializeTLS(flagsFor(dir, { rotateServerCertificates: true, tlsMinVersion: "TLS12" })),
        { message: 'failed to construct kubelet dependencies: unknown tls version "TLS12"' },
      );
    });
    await t.step("Go's names, insecure ones and the ChaCha20 aliases are accepted", async () => {
      const o = await initializeTLS(flagsFor(dir, {
        rotateServerCertificates: true,
        tlsCipherSuites: [
          "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
          "TLS_RSA_WITH_AES_128_CBC_SHA",
          "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
        ],
      }));
      assertEquals(o.cipherSuites, [0xc02b, 0x002f, 0xcca8]);
      assertEquals(o.minVersion, "TLSv1.2");
    });
    await t.step("--cert-dir holds the self-signed pair", async () => {
      const o = await initializeTLS(flagsFor(dir, { certDir: join(dir, "certs") }));
      assertEquals(o.certFile, join(dir, "certs", "kubelet.crt"));
      assertEquals(o.keyFile, join(dir, "certs", "kubelet.key"));
      await Deno.stat(o.certFile);
    });
  } finally {
    setLogSink(previous);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestServingCertificateFilesUnreadable", async () => {
  // kubelet refuses to start: "failed to initialize file based certificate manager: ...".
  const dir = await Deno.makeTempDir();
  try {
    const flags = flagsFor(dir, {
      tlsCertFile: join(dir, "missing.crt"),
      tlsPrivateKeyFile: join(dir, "missing.key"),
    });
    await rejects(
      newServingCertificateManager(flags, await initializeTLS(flags), {
        clock: new FakeClock(0),
        setCertificate: () => {},
      }),
      (e: Error) => {
        assert(
          e.message.startsWith(
            "failed to initialize file based certificate manager: unable to set up dynamic " +
              "certificate manager for kubelet server cert files: ",
          ),
          e.message,
        );
        return true;
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
