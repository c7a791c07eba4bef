/**
 * Tests for building HTTP probe requests.
 * Mirrors kubelet's pkg/probe/http/request_test.go, plus the header defaults and Go URL details the
 * prober's output depends on.
 * @module
 */
import assert from "node:assert/strict";
import type { Container, HTTPHeader } from "../../../src/api/core/v1/mod.ts";
import {
  canonicalHeaderKey,
  formatURL,
  HeaderMap,
  newProbeRequest,
  newRequestForHTTPGetAction,
  ProbeURL,
  v1HeaderToHTTPHeader,
} from "../../../src/probe/http/mod.ts";

Deno.test("TestFormatURL", async (t) => {
  const testCases: [string, string, number, string, string][] = [
    ["http", "localhost", 93, "", "http://localhost:93"],
    ["https", "localhost", 93, "/path", "https://localhost:93/path"],
    ["http", "localhost", 93, "?foo", "http://localhost:93?foo"],
    ["https", "localhost", 93, "/path?bar", "https://localhost:93/path?bar"],
  ];
  for (const [scheme, host, port, path, expected] of testCases) {
    await t.step(`${scheme} ${host} ${port} ${JSON.stringify(path)}`, () => {
      assert.equal(formatURL(scheme, host, { port, path }).toString(), expected);
    });
  }
});

Deno.test("TestFormatURL IPv6 and odd paths", async (t) => {
  await t.step("IPv6 host is bracketed", () => {
    const u = formatURL("http", "fd00::1", { port: 8080, path: "/healthz" });
    assert.equal(u.toString(), "http://[fd00::1]:8080/healthz");
    assert.equal(u.hostname, "fd00::1");
    assert.equal(u.port, "8080");
  });
  await t.step("IPv6 zone is written %25", () => {
    assert.equal(
      formatURL("http", "fe80::1%eth0", { port: 80, path: "/" }).toString(),
      "http://[fe80::1%25eth0]:80/",
    );
  });
  await t.step("default port stays explicit", () => {
    assert.equal(
      formatURL("http", "10.0.0.1", { port: 80, path: "/" }).toString(),
      "http://10.0.0.1:80/",
    );
  });
  await t.step("unparsable path kept as a path", () => {
    const u = formatURL("http", "localhost", { port: 93, path: "/%zz" });
    assert.equal(u.path, "/%zz");
    assert.equal(u.toString(), "http://localhost:93/%25zz");
  });
  await t.step("path without leading slash gets one", () => {
    assert.equal(
      formatURL("http", "localhost", { port: 93, path: "healthz" }).toString(),
      "http://localhost:93/healthz",
    );
  });
  await t.step("escaped slash kept as written, fragment not sent", () => {
    const u = formatURL("http", "h", { port: 1, path: "/a%2Fb?q=1#frag" });
    assert.equal(u.path, "/a/b");
    assert.equal(u.requestURI(), "/a%2Fb?q=1");
    assert.equal(u.toString(), "http://h:1/a%2Fb?q=1#frag");
  });
  await t.step("space escaped; an invalid raw path falls back to escaping the path", () => {
    const u = formatURL("http", "h", { port: 1, path: "/a%2Fb c" });
    assert.equal(u.path, "/a/b c");
    assert.equal(u.requestURI(), "/a/b%20c");
  });
});

Deno.test("TestProbeURL resolveReference", async (t) => {
  const base = ProbeURL.parse("http://127.0.0.1:80/a/b?x=1");
  const cases: [string, string][] = [
    ["/success", "http://127.0.0.1:80/success"],
    ["c", "http://127.0.0.1:80/a/c"],
    ["../c", "http://127.0.0.1:80/c"],
    ["?y=2", "http://127.0.0.1:80/a/b?y=2"],
    ["//other:81/p", "http://other:81/p"],
    ["https://x.example/", "https://x.example/"],
    ["", "http://127.0.0.1:80/a/b?x=1"],
  ];
  for (const [ref, expected] of cases) {
    await t.step(JSON.stringify(ref), () => {
      assert.equal(base.resolveReference(ProbeURL.parse(ref)).toString(), expected);
    });
  }
  await t.step("bad escape is an error with Go's text", () => {
    assert.throws(() => ProbeURL.parse("/%zz"), { message: 'invalid URL escape "%zz"' });
  });
});

Deno.test("Test_v1HeaderToHTTPHeader", async (t) => {
  const tests: { name: string; headerList: HTTPHeader[]; want: Record<string, string[]> }[] = [
    {
      name: "not empty input",
      headerList: [
        { name: "Connection", value: "Keep-Alive" },
        { name: "Content-Type", value: "text/html" },
        { name: "Accept-Ranges", value: "bytes" },
      ],
      want: {
        Connection: ["Keep-Alive"],
        "Content-Type": ["text/html"],
        "Accept-Ranges": ["bytes"],
      },
    },
    {
      name: "case insensitive",
      headerList: [{ name: "HOST", value: "example.com" }, { name: "FOO-bAR", value: "value" }],
      want: { Host: ["example.com"], "Foo-Bar": ["value"] },
    },
    { name: "empty input", headerList: [], want: {} },
  ];
  for (const tt of tests) {
    await t.step(tt.name, () => {
      assert.deepEqual(v1HeaderToHTTPHeader(tt.headerList).toJSON(), tt.want);
    });
  }
});

Deno.test("TestHeaderConversion", async (t) => {
  const testCases: { name: string; headers: HTTPHeader[]; expected: Record<string, string[]> }[] = [
    {
      name: "Accept kept",
      headers: [{ name: "Accept", value: "application/json" }],
      expected: { Accept: ["application/json"] },
    },
    {
      name: "accept canonicalised",
      headers: [{ name: "accept", value: "application/json" }],
      expected: { Accept: ["application/json"] },
    },
    {
      name: "accept and Accept accumulate",
      headers: [{ name: "accept", value: "application/json" }, { name: "Accept", value: "*/*" }],
      expected: { Accept: ["application/json", "*/*"] },
    },
    {
      name: "pragma canonicalised",
      headers: [{ name: "pragma", value: "no-cache" }],
      expected: { Pragma: ["no-cache"] },
    },
    {
      name: "accept, pragma, Accept",
      headers: [
        { name: "accept", value: "application/json" },
        { name: "pragma", value: "no-cache" },
        { name: "Accept", value: "*/*" },
      ],
      expected: { Accept: ["application/json", "*/*"], Pragma: ["no-cache"] },
    },
    {
      name: "X-forwarded-for canonicalised",
      headers: [{ name: "X-forwarded-for", value: "username" }],
      expected: { "X-Forwarded-For": ["username"] },
    },
  ];
  for (const test of testCases) {
    await t.step(test.name, () => {
      assert.deepEqual(v1HeaderToHTTPHeader(test.headers).toJSON(), test.expected);
    });
  }
});

Deno.test("TestCanonicalHeaderKey", async (t) => {
  const cases: [string, string][] = [
    ["HOST", "Host"],
    ["FOO-bAR", "Foo-Bar"],
    ["x-forwarded-for", "X-Forwarded-For"],
    ["user-agent", "User-Agent"],
    ["bad name", "bad name"],
    ["a_b", "A_b"],
    // Already canonical: the same name back, token characters or not.
    ["Content-Type", "Content-Type"],
    ["X-Forwarded-For", "X-Forwarded-For"],
    ["Bad Name", "Bad Name"],
    ["A-", "A-"],
    ["-", "-"],
    ["-a", "-A"],
    ["é-x", "é-x"],
  ];
  for (const [input, expected] of cases) {
    await t.step(input, () => assert.equal(canonicalHeaderKey(input), expected));
  }
});

Deno.test("TestNewProbeRequest", async (t) => {
  await t.step("defaults added when absent", () => {
    const { request } = newProbeRequest("http://127.0.0.1:8080/healthz");
    assert.deepEqual(request!.headers.toJSON(), {
      "User-Agent": ["kube-probe/1.36"],
      Accept: ["*/*"],
    });
    assert.equal(request!.host, "");
    assert.equal(request!.url.toString(), "http://127.0.0.1:8080/healthz");
  });
  await t.step("user agent fragment", () => {
    const { request } = newProbeRequest("http://h:1/", null, { userAgentFragment: "test" });
    assert.equal(request!.headers.get("User-Agent"), "kube-test/1.36");
  });
  await t.step("empty User-Agent kept present", () => {
    const { request } = newProbeRequest("http://h:1/", { "User-Agent": [""] });
    assert.equal(request!.headers.has("User-Agent"), true);
    assert.equal(request!.headers.get("User-Agent"), "");
  });
  await t.step("empty Accept removed", () => {
    const { request } = newProbeRequest("http://h:1/", { Accept: [""] });
    assert.equal(request!.headers.has("Accept"), false);
  });
  await t.step("Accept whose first value is empty removed entirely", () => {
    const { request } = newProbeRequest("http://h:1/", { Accept: ["", "text/html"] });
    assert.equal(request!.headers.has("Accept"), false);
  });
  await t.step("Host header becomes the request host", () => {
    const { request } = newProbeRequest("http://h:1/", { Host: ["example.com"] });
    assert.equal(request!.host, "example.com");
  });
  await t.step("caller's headers not modified", () => {
    const headers = new HeaderMap([["X-A", "1"]]);
    newProbeRequest("http://h:1/", headers);
    assert.deepEqual(headers.toJSON(), { "X-A": ["1"] });
  });
  await t.step("unparsable URL is an error", () => {
    const { request, error } = newProbeRequest("http://a b:80/");
    assert.equal(request, undefined);
    assert.equal(error?.message, 'parse "http://a b:80/": invalid character " " in host name');
  });
});

Deno.test("TestNewRequestForHTTPGetAction", async (t) => {
  const container: Container = { name: "app", ports: [{ name: "http", containerPort: 8080 }] };
  await t.step("scheme lower-cased, host defaults to the pod IP, named port", () => {
    const { request, error } = newRequestForHTTPGetAction(
      { scheme: "HTTPS", port: "http", path: "/healthz" },
      { container, podIP: "10.0.0.7" },
    );
    assert.equal(error, undefined);
    assert.equal(request!.url.toString(), "https://10.0.0.7:8080/healthz");
  });
  await t.step("empty scheme is http, explicit host wins", () => {
    const { request } = newRequestForHTTPGetAction(
      { port: 93, host: "example.com", path: "?foo" },
      { container, podIP: "10.0.0.7" },
    );
    assert.equal(request!.url.toString(), "http://example.com:93?foo");
  });
  await t.step("IPv6 pod IP", () => {
    const { request } = newRequestForHTTPGetAction(
      { port: 80, path: "/" },
      { container, podIP: "fd00::7" },
    );
    assert.equal(request!.url.toString(), "http://[fd00::7]:80/");
  });
  await t.step("headers converted with defaults", () => {
    const { request } = newRequestForHTTPGetAction(
      {
        port: 80,
        httpHeaders: [{ name: "HOST", value: "svc.local" }, { name: "accept", value: "" }],
      },
      { container, podIP: "10.0.0.7" },
    );
    assert.equal(request!.host, "svc.local");
    assert.deepEqual(request!.headers.toJSON(), {
      Host: ["svc.local"],
      "User-Agent": ["kube-probe/1.36"],
    });
  });
  await t.step("unknown port name is an error", () => {
    const { request, error } = newRequestForHTTPGetAction(
      { port: "metrics" },
      { container, podIP: "10.0.0.7" },
    );
    assert.equal(request, undefined);
    assert.equal(error?.message, "port metrics not found");
  });
  await t.step("out of range port is an error", () => {
    const { error } = newRequestForHTTPGetAction({ port: 70000 }, { container, podIP: "10.0.0.7" });
    assert.equal(error?.message, "invalid port number: 70000");
  });
});
