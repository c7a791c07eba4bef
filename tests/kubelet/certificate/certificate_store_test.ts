/**
 * The file store of rotated pairs: dated files, the `-current` symlink, the fallbacks and the
 * recovery of an interrupted update.
 * Mirrors k8s.io/client-go/util/certificate/certificate_store_test.go.
 * @module
 */
import { deepStrictEqual as assertEquals, ok as assert, rejects } from "node:assert/strict";
import { join } from "node:path";
import {
  newFileStore,
  NoCertKeyError,
} from "../../../src/kubelet/certificate/certificate_store.ts";
import { newCertificateAuthority } from "../../../src/util/cert/cert.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { setLogSink } from "../../../src/util/log.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const previous = setLogSink(() => {});
  const dir = await Deno.makeTempDir();
  try {
    await fn(dir);
  } finally {
    setLogSink(previous);
    await Deno.remove(dir, { recursive: true });
  }
}

const ca = await newCertificateAuthority("store-test-ca");
const pairA = await ca.sign({ commonName: "a" }, { usage: "server", ips: ["127.0.0.1"] });
const pairB = await ca.sign({ commonName: "b" }, { usage: "server", ips: ["127.0.0.1"] });

function storeIn(dir: string, clock = new FakeClock(Date.UTC(2026, 10, 27, 8, 0, 0))) {
  return newFileStore({
    pairNamePrefix: "kubelet-server",
    certDirectory: dir,
    keyDirectory: dir,
    certFile: "",
    keyFile: "",
    clock,
  });
}

Deno.test("TestUpdateRotation", async () => {
  await withDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 10, 27, 8, 0, 0));
    const store = await storeIn(dir, clock);
    const a = await store.update(pairA.certPem, pairA.keyPem);
    assertEquals(a.leaf.commonName, "a");
    const current = join(dir, "kubelet-server-current.pem");
    const first = await Deno.readLink(current);
    assert(/kubelet-server-\d{4}-11-27-\d\d-00-00\.pem$/.test(first), first);
    await clock.step(1000);
    const b = await store.update(pairB.certPem, pairB.keyPem);
    assertEquals(b.leaf.commonName, "b");
    const second = await Deno.readLink(current);
    assert(second !== first, "a new dated file");
    assertEquals((await store.current()).leaf.commonName, "b");
    // The old pair stays on disk; no `-updated` link is left.
    await Deno.stat(first);
    await rejects(Deno.lstat(join(dir, "kubelet-server-updated.pem")), Deno.errors.NotFound);
  });
});

Deno.test("TestUpdateWithBadCertKeyData", async () => {
  await withDir(async (dir) => {
    const store = await storeIn(dir);
    await rejects(store.update("not a certificate", pairA.keyPem), /invalid certificate data/);
    await rejects(store.update(pairA.certPem, "not a key"), { message: "invalid key data" });
    // A key that does not belong to the certificate is refused; nothing becomes current.
    await rejects(store.update(pairA.certPem, pairB.keyPem), /private key does not match/);
    await rejects(Deno.lstat(join(dir, "kubelet-server-current.pem")), Deno.errors.NotFound);
  });
});

Deno.test("TestCurrentPairFile", async () => {
  await withDir(async (dir) => {
    const pairFile = join(dir, "kubelet-server-pair.pem");
    await Deno.writeTextFile(pairFile, pairA.certPem + pairA.keyPem);
    await Deno.symlink(pairFile, join(dir, "kubelet-server-current.pem"));
    const cert = await (await storeIn(dir)).current();
    assertEquals(cert.leaf.commonName, "a");
    assert(!cert.certPem.includes("PRIVATE KEY") && cert.keyPem.includes("PRIVATE KEY"));
  });
});

Deno.test("TestCurrentCertKeyFiles", async () => {
  await withDir(async (dir) => {
    await Deno.writeTextFile(join(dir, "kubelet-server.crt"), pairB.certPem);
    await Deno.writeTextFile(join(dir, "kubelet-server.key"), pairB.keyPem);
    assertEquals((await (await storeIn(dir)).current()).leaf.commonName, "b");
  });
});

Deno.test("TestCurrentNoFiles", async () => {
  await withDir(async (dir) => {
    await rejects((await storeIn(dir)).current(), (e: unknown) => {
      assert(e instanceof NoCertKeyError);
      assertEquals(
        e.message,
        `no cert/key files read at "${join(dir, "kubelet-server-current.pem")}", ("", "") or ` +
          `("${dir}", "${dir}")`,
      );
      return true;
    });
  });
});

Deno.test("TestRecoverUpdatedSymlink", async () => {
  // A crash between making `-updated` and renaming it: the next start finishes the rename.
  await withDir(async (dir) => {
    const pairFile = join(dir, "kubelet-server-2026-11-27-08-00-00.pem");
    await Deno.writeTextFile(pairFile, pairA.certPem + pairA.keyPem);
    await Deno.symlink(pairFile, join(dir, "kubelet-server-updated.pem"));
    const store = await storeIn(dir);
    assertEquals(await Deno.readLink(join(dir, "kubelet-server-current.pem")), pairFile);
    assertEquals((await store.current()).leaf.commonName, "a");
  });
});

Deno.test("TestUpdateSymlinkNoSymlink", async () => {
  // A `-current` that is a plain file is not replaced.
  await withDir(async (dir) => {
    await Deno.writeTextFile(join(dir, "kubelet-server-current.pem"), pairA.certPem + pairA.keyPem);
    const store = await storeIn(dir);
    await rejects(store.update(pairB.certPem, pairB.keyPem), {
      message: `expected "${join(dir, "kubelet-server-current.pem")}" to be a symlink but it is ` +
        "a file",
    });
  });
});
