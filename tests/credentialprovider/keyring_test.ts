/**
 * Tests of the docker keyring and pull-secret parsing.
 * Ports kubernetes pkg/credentialprovider/keyring_test.go (TestURLsMatch, TestDockerKeyringForGlob,
 * TestKeyringMiss, TestKeyringHitWithUnqualifiedDockerHub, TestDockerKeyringLookup) and
 * secrets/secrets_test.go (TestMakeDockerKeyring).
 * @module
 */
import { deepStrictEqual as assertEquals, throws as assertThrows } from "node:assert/strict";
import {
  BasicDockerKeyring,
  makeDockerKeyring,
  type Secret,
  urlsMatchStr,
} from "../../src/credentialprovider/keyring.ts";

Deno.test("TestURLsMatch", async (t) => {
  const cases: [string, string, boolean][] = [
    // Host globs match one label each; ports must be equal; the glob's path is a prefix.
    ["*.kubernetes.io", "prefix.kubernetes.io", true],
    ["prefix.*.io", "prefix.kubernetes.io", true],
    ["prefix.kubernetes.*", "prefix.kubernetes.io", true],
    ["*-good.kubernetes.io", "prefix-good.kubernetes.io", true],
    ["*.kubernetes.io/blah", "prefix.kubernetes.io/blah", true],
    ["*.kubernetes.io/blah", "prefix.kubernetes.io/blah/another", true],
    ["*.kubernetes.io/blah", "prefix.kubernetes.io", false],
    ["*.kubernetes.io", "kubernetes.io", false],
    ["*.*.kubernetes.io", "prefix.kubernetes.io", false],
    ["*.kubernetes.io:1111/blah", "prefix.kubernetes.io:1111/blah", true],
    ["*.kubernetes.io:1111/blah", "prefix.kubernetes.io:1112/blah", false],
    ["kubernetes.io:5000", "kubernetes.io", false],
    ["127.0.0.1:5000", "127.0.0.1:5000/probelet/busybox", true],
  ];
  for (const [glob, target, matches] of cases) {
    await t.step(`${glob} vs ${target}`, () => assertEquals(urlsMatchStr(glob, target), matches));
  }
});

Deno.test("TestDockerKeyringForGlob", async (t) => {
  const cases: [string, string][] = [
    ["https://hello.kubernetes.io", "hello.kubernetes.io"],
    ["https://*.docker.io", "hello.docker.io"],
    ["https://*.docker.io/path", "hello.docker.io/path"],
    ["https://hello.docker.io/path", "hello.docker.io/path/subpath"],
    ["https://*.docker.io/v1/", "hello.docker.io"],
    ["https://*.docker.io/v2/", "hello.docker.io"],
    ["*.docker.io", "hello.docker.io/path"],
  ];
  for (const [loc, image] of cases) {
    await t.step(`${loc} for ${image}`, () => {
      const keyring = new BasicDockerKeyring();
      keyring.add(undefined, { [loc]: { username: "foo", password: "bar" } });
      const { credentials, found } = keyring.lookup(image);
      assertEquals(found, true);
      assertEquals(credentials.map((c) => [c.username, c.password]), [["foo", "bar"]]);
    });
  }
});

Deno.test("TestKeyringMiss", async (t) => {
  for (
    const [loc, image] of [
      ["https://hello.kubernetes.io", "world.mesos.org/foo/bar"],
      ["https://*.docker.com", "prefix.docker.io"],
      ["suffix.kubernetes.io", "prefix.kubernetes.io"],
      ["prefix.kubernetes.io", "suffix.kubernetes.io"],
      ["127.0.0.1:5000", "127.0.0.1:5001/probelet/busybox"],
    ]
  ) {
    await t.step(`${loc} for ${image}`, () => {
      const keyring = new BasicDockerKeyring();
      keyring.add(undefined, { [loc]: { username: "foo", password: "bar" } });
      assertEquals(keyring.lookup(image), { credentials: [], found: false });
    });
  }
});

Deno.test("TestKeyringHitWithUnqualifiedDockerHub", () => {
  const keyring = new BasicDockerKeyring();
  keyring.add(undefined, { "https://index.docker.io/v1/": { username: "foo", password: "bar" } });
  const { credentials, found } = keyring.lookup("google/docker-registry");
  assertEquals(found, true);
  assertEquals(credentials[0].username, "foo");
});

Deno.test("TestDockerKeyringLookup", async (t) => {
  const keyring = new BasicDockerKeyring();
  keyring.add(undefined, {
    "bar.example.com/pong": { username: "grace", password: "squash" },
    "bar.example.com": { username: "anne", password: "hathaway" },
  });
  const cases: [string, string[]][] = [
    // Most specific first.
    ["bar.example.com/pong", ["grace", "anne"]],
    ["bar.example.com/ping", ["anne"]],
    ["bar.example.com", ["anne"]],
    ["foo.example.com", []],
  ];
  for (const [image, users] of cases) {
    await t.step(image, () => {
      assertEquals(keyring.lookup(image).credentials.map((c) => c.username), users);
    });
  }
});

function secretOf(type: string, key: string, value: unknown): Secret {
  return {
    metadata: { namespace: "ns", name: "s", uid: "u" },
    type,
    data: { [key]: btoa(JSON.stringify(value)) },
  };
}

Deno.test("TestMakeDockerKeyring", async (t) => {
  await t.step("dockerconfigjson auths, auth field decoded", () => {
    const keyring = makeDockerKeyring([
      secretOf("kubernetes.io/dockerconfigjson", ".dockerconfigjson", {
        auths: { "127.0.0.1:5000": { auth: btoa("user:pa:ss") } },
      }),
    ], new BasicDockerKeyring());
    const [c] = keyring.lookup("127.0.0.1:5000/probelet/busybox").credentials;
    assertEquals([c.username, c.password, c.source], ["user", "pa:ss", {
      namespace: "ns",
      name: "s",
      uid: "u",
    }]);
  });
  await t.step("legacy dockercfg", () => {
    const keyring = makeDockerKeyring([
      secretOf("kubernetes.io/dockercfg", ".dockercfg", {
        "reg.example.com": { username: "a", password: "b" },
      }),
    ], new BasicDockerKeyring());
    assertEquals(keyring.lookup("reg.example.com/x").credentials[0].username, "a");
  });
  await t.step("a secret of another type is not read", () => {
    const keyring = makeDockerKeyring([
      secretOf("Opaque", ".dockerconfigjson", {
        auths: { "reg.example.com": { auth: btoa("a:b") } },
      }),
    ], new BasicDockerKeyring());
    assertEquals(keyring.lookup("reg.example.com/x").found, false);
  });
  await t.step("pod secrets before the node's", () => {
    const node = new BasicDockerKeyring();
    node.add(undefined, { "reg.example.com": { username: "node", password: "n" } });
    const keyring = makeDockerKeyring([
      secretOf("kubernetes.io/dockerconfigjson", ".dockerconfigjson", {
        auths: { "reg.example.com": { auth: btoa("pod:p") } },
      }),
    ], node);
    assertEquals(keyring.lookup("reg.example.com/x").credentials.map((c) => c.username), [
      "pod",
      "node",
    ]);
  });
  await t.step("invalid JSON throws", () => {
    assertThrows(() =>
      makeDockerKeyring([{
        metadata: {},
        type: "kubernetes.io/dockerconfigjson",
        data: { ".dockerconfigjson": btoa("{not json") },
      }], new BasicDockerKeyring())
    );
  });
});
