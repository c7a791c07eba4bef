/**
 * Tests for the HTTP prober against real servers on 127.0.0.1.
 * Mirrors kubelet's pkg/probe/http/http_test.go, plus wire-level checks Go gets from net/http.
 * @module
 */
import assert from "node:assert/strict";
import type * as http from "node:http";
import {
  type HeaderInit,
  maxRespBodyLength,
  newHttpProber,
  newProbeRequest,
  type ProbeRequest,
} from "../../../src/probe/http/mod.ts";
import type { ProbeOutcome } from "../../../src/probe/probe.ts";
import { ProbeResult } from "../../../src/probe/probe.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import {
  goRequestHeader,
  goRequestHost,
  type Handler,
  type RecordingServer,
  redirect,
  startRecordingServer,
  startServer,
  startTLSServer,
} from "./test_server.ts";

function mustRequest(url: string, headers?: HeaderInit | null): ProbeRequest {
  const { request, error } = newProbeRequest(url, headers);
  assert.equal(error, undefined);
  return request!;
}

async function probeOnce(
  handler: Handler,
  options: { path?: string; headers?: HeaderInit | null; follow?: boolean; timeoutMs?: number },
): Promise<ProbeOutcome> {
  const server = await startServer(handler);
  try {
    const prober = newHttpProber({ followNonLocalRedirects: options.follow ?? false });
    const request = mustRequest(server.url + (options.path ?? ""), options.headers);
    return await prober.probe(request, { timeoutMs: options.timeoutMs ?? 1000 });
  } finally {
    await server.close();
  }
}

Deno.test("TestHTTPProbeProxy", async () => {
  const res = "welcome to http probe proxy";
  let proxied = 0;
  const proxy = await startServer((_req, w) => {
    proxied++;
    w.end(res);
  });
  const saved = new Map(
    ["http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"].map((k) => [k, Deno.env.get(k)]),
  );
  try {
    Deno.env.set("http_proxy", proxy.url + "/");
    Deno.env.set("HTTP_PROXY", proxy.url + "/");
    Deno.env.delete("no_proxy");
    Deno.env.delete("NO_PROXY");
    const prober = newHttpProber({ followNonLocalRedirects: true });
    const { output } = await prober.probe(mustRequest("http://example.com"), { timeoutMs: 3000 });
    assert.notEqual(output, res, "proxy was used");
    assert.equal(proxied, 0);
  } finally {
    for (const [k, v] of saved) v === undefined ? Deno.env.delete(k) : Deno.env.set(k, v);
    await proxy.close();
  }
});

Deno.test("TestHTTPProbeProxy proxy set at process start", async () => {
  let proxied = 0;
  const proxy = await startServer((_req, w) => {
    proxied++;
    w.end("proxied");
  });
  try {
    // A fresh process, in case proxy settings are only read at startup.
    const mod = new URL("../../../src/probe/http/mod.ts", import.meta.url).href;
    const code = `import { newHttpProber, newProbeRequest } from ${JSON.stringify(mod)};
      const { request } = newProbeRequest("http://example.com");
      const outcome = await newHttpProber().probe(request, { timeoutMs: 3000 });
      console.log(outcome.output);`;
    const env = {
      http_proxy: proxy.url + "/",
      HTTP_PROXY: proxy.url + "/",
      no_proxy: "",
      NO_PROXY: "",
    };
    const { code: exit, stdout } = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--no-check", code],
      env,
      stdout: "piped",
      stderr: "inherit",
    }).output();
    assert.equal(exit, 0);
    const output = new TextDecoder().decode(stdout).trim();
    assert.ok(output.startsWith('Get "http://example.com": '), output);
    assert.equal(proxied, 0);
  } finally {
    await proxy.close();
  }
});

// Handlers of kubelet's table, written for node:http but answering what Go's handlers answer.
const handleReq = (code: number, body: string): Handler => (_req, w) => {
  w.writeHead(code);
  w.end(body);
};
const headerCounterHandler: Handler = (req, w) => {
  w.end(String(goRequestHeader(req).size));
};
const headerKeysNamesHandler: Handler = (req, w) => {
  w.end([...goRequestHeader(req).keys()].sort().join("\n"));
};
const headerEchoHandler: Handler = (req, w) => {
  let out = "";
  for (const [k, vs] of goRequestHeader(req)) for (const v of vs) out += `${k}: ${v}\n`;
  w.end(out);
};
const hostHandler: Handler = (req, w) => {
  w.end(goRequestHost(req));
};
// Go's server answers WriteHeader(-1) with a panic that drops the connection unanswered.
const panicHandler: Handler = (req) => {
  req.socket.destroy();
};
const slowHandler = (ms: number): Handler => (_req, w) => {
  const timer = setTimeout(() => w.end("too late"), ms);
  w.on("close", () => clearTimeout(timer));
};
const redirectHandler = (code: number, newOK: boolean): Handler => (req, w) => {
  if (req.url === "/") {
    redirect(w, "/new", code);
    return;
  }
  if (req.url === "/new") {
    w.writeHead(newOK ? 200 : 500);
    w.end();
    return;
  }
  w.writeHead(404);
  w.end();
};
const redirectHandlerWithBody = (code: number, body: string): Handler => (req, w) => {
  if (req.url === "/") {
    redirect(w, "/new", code);
    return;
  }
  // A redirect status without Location is not followed: it is the final response.
  w.writeHead(code);
  w.end(body);
};

interface CheckerCase {
  name: string;
  handler: Handler;
  reqHeaders?: HeaderInit | null;
  health: ProbeResult;
  accBody?: string;
  notBody?: string;
}

const checkerCases: CheckerCase[] = [
  { name: "0 ok", handler: handleReq(200, "ok body"), health: "success", accBody: "ok body" },
  {
    name: "1 header count",
    handler: headerCounterHandler,
    reqHeaders: {},
    health: "success",
    accBody: "3",
  },
  {
    name: "2 header names",
    handler: headerKeysNamesHandler,
    reqHeaders: {},
    health: "success",
    accBody: "Accept\nConnection\nUser-Agent",
  },
  {
    name: "3 Accept-Encoding gzip",
    handler: headerEchoHandler,
    reqHeaders: { "Accept-Encoding": ["gzip"] },
    health: "success",
    accBody: "Accept-Encoding: gzip",
  },
  {
    name: "4 Accept-Encoding foo",
    handler: headerEchoHandler,
    reqHeaders: { "Accept-Encoding": ["foo"] },
    health: "success",
    accBody: "Accept-Encoding: foo",
  },
  {
    name: "5 Accept-Encoding empty",
    handler: headerEchoHandler,
    reqHeaders: { "Accept-Encoding": [""] },
    health: "success",
    accBody: "Accept-Encoding: \n",
  },
  {
    name: "6 custom header",
    handler: headerEchoHandler,
    reqHeaders: { "X-Muffins-Or-Cupcakes": ["muffins"] },
    health: "success",
    accBody: "X-Muffins-Or-Cupcakes: muffins",
  },
  {
    name: "7 User-Agent override",
    handler: headerEchoHandler,
    reqHeaders: { "User-Agent": ["foo/1.0"] },
    health: "success",
    accBody: "User-Agent: foo/1.0",
  },
  {
    name: "8 User-Agent empty",
    handler: headerEchoHandler,
    reqHeaders: { "User-Agent": [""] },
    health: "success",
    notBody: "User-Agent",
  },
  {
    name: "9 User-Agent default",
    handler: headerEchoHandler,
    reqHeaders: {},
    health: "success",
    accBody: "User-Agent: kube-probe/",
  },
  {
    name: "10 UA and Accept override",
    handler: headerEchoHandler,
    reqHeaders: { "User-Agent": ["foo/1.0"], Accept: ["text/html"] },
    health: "success",
    accBody: "Accept: text/html",
  },
  {
    name: "11 UA and Accept override keep UA",
    handler: headerEchoHandler,
    reqHeaders: { "User-Agent": ["foo/1.0"], Accept: ["foo/*"] },
    health: "success",
    accBody: "User-Agent: foo/1.0",
  },
  {
    name: "12 custom header and Accept",
    handler: headerEchoHandler,
    reqHeaders: { "X-Muffins-Or-Cupcakes": ["muffins"], Accept: ["foo/*"] },
    health: "success",
    accBody: "X-Muffins-Or-Cupcakes: muffins",
  },
  {
    name: "13 Accept override",
    handler: headerEchoHandler,
    reqHeaders: { Accept: ["foo/*"] },
    health: "success",
    accBody: "Accept: foo/*",
  },
  {
    name: "14 Accept empty",
    handler: headerEchoHandler,
    reqHeaders: { Accept: [""] },
    health: "success",
    notBody: "Accept:",
  },
  {
    name: "15 UA override and Accept empty",
    handler: headerEchoHandler,
    reqHeaders: { "User-Agent": ["foo/1.0"], Accept: [""] },
    health: "success",
    notBody: "Accept:",
  },
  {
    name: "16 Accept default",
    handler: headerEchoHandler,
    reqHeaders: {},
    health: "success",
    accBody: "Accept: */*",
  },
  {
    name: "17 Host header",
    handler: hostHandler,
    reqHeaders: { Host: ["muffins.cupcakes.org"] },
    health: "success",
    accBody: "muffins.cupcakes.org",
  },
  { name: "18 connection dropped", handler: panicHandler, health: "failure" },
  { name: "19 500", handler: handleReq(500, "fail body"), health: "failure" },
  { name: "20 timeout", handler: slowHandler(3000), health: "failure" },
  { name: "21 301 ok", handler: redirectHandler(301, true), health: "success" },
  { name: "22 301 bad", handler: redirectHandler(301, false), health: "failure" },
  { name: "23 302 ok", handler: redirectHandler(302, true), health: "success" },
  { name: "24 302 bad", handler: redirectHandler(302, false), health: "failure" },
  { name: "25 307 ok", handler: redirectHandler(307, true), health: "success" },
  { name: "26 307 bad", handler: redirectHandler(307, false), health: "failure" },
  { name: "27 308 ok", handler: redirectHandler(308, true), health: "success" },
  { name: "28 308 bad", handler: redirectHandler(308, false), health: "failure" },
  {
    name: "29 308 without Location, empty body",
    handler: redirectHandlerWithBody(308, ""),
    health: "warning",
    accBody: "Probe terminated redirects, Response body:",
  },
  {
    name: "30 308 without Location, with body",
    handler: redirectHandlerWithBody(308, "ok body"),
    health: "warning",
    accBody: "Probe terminated redirects, Response body: ok body",
  },
];

Deno.test("TestHTTPProbeChecker", async (t) => {
  assert.equal(checkerCases.length, 31);
  for (const test of checkerCases) {
    await t.step(test.name, async () => {
      const outcome = await probeOnce(test.handler, {
        headers: test.reqHeaders,
        follow: true,
        timeoutMs: 1000,
      });
      assert.equal(outcome.error, undefined, "only Unknown may carry an error");
      assert.equal(outcome.result, test.health, outcome.output);
      if (outcome.result !== ProbeResult.Failure) {
        assert.ok(outcome.output.includes(test.accBody ?? ""), outcome.output);
        if (test.notBody) assert.ok(!outcome.output.includes(test.notBody), outcome.output);
      }
    });
  }
});

Deno.test("TestHTTPProbeChecker failure outputs", async (t) => {
  await t.step("status code only, never the body", async () => {
    const outcome = await probeOnce(handleReq(500, "fail body"), {});
    assert.deepEqual(outcome, {
      result: "failure",
      output: "HTTP probe failed with statuscode: 500",
    });
  });
  await t.step("dropped connection reads as Go's EOF", async () => {
    const server = await startServer(panicHandler);
    try {
      const outcome = await newHttpProber().probe(mustRequest(server.url), { timeoutMs: 1000 });
      assert.equal(outcome.output, `Get "${server.url}": EOF`);
    } finally {
      await server.close();
    }
  });
  await t.step("connection refused", async () => {
    const outcome = await newHttpProber().probe(mustRequest("http://127.0.0.1:1/"), {
      timeoutMs: 1000,
    });
    assert.deepEqual(outcome, {
      result: "failure",
      output: 'Get "http://127.0.0.1:1/": dial tcp 127.0.0.1:1: connect: connection refused',
    });
  });
  await t.step("invalid header value refused before sending", async () => {
    const server = await startRecordingServer();
    try {
      const request = mustRequest(server.url, { "X-Bad": ["a\r\nInjected: 1"] });
      const outcome = await newHttpProber().probe(request, { timeoutMs: 1000 });
      assert.deepEqual(outcome, {
        result: "failure",
        output: `Get "${server.url}": net/http: invalid header field value for "X-Bad"`,
      });
      assert.equal(server.connections, 0);
    } finally {
      await server.close();
    }
  });
  await t.step("unsupported scheme", async () => {
    const outcome = await newHttpProber().probe(mustRequest("ftp://127.0.0.1:21/"), {
      timeoutMs: 1000,
    });
    assert.equal(outcome.output, 'Get "ftp://127.0.0.1:21/": unsupported protocol scheme "ftp"');
  });
  await t.step("timeout awaiting headers, on the injected clock", async () => {
    const clock = new FakeClock(0);
    let arrived!: () => void;
    const requestArrived = new Promise<void>((resolve) => arrived = resolve);
    const server = await startServer((_req, w) => {
      arrived();
      w.on("close", () => {});
    });
    try {
      const probing = newHttpProber({ clock }).probe(mustRequest(server.url + "/slow"), {
        timeoutMs: 1000,
      });
      await requestArrived;
      await clock.step(999);
      let settled = false;
      probing.then(() => settled = true);
      await clock.step(0);
      assert.equal(settled, false, "probe ended before its deadline");
      await clock.step(1);
      const outcome = await probing;
      assert.deepEqual(outcome, {
        result: "failure",
        output: `Get "${server.url}/slow": context deadline exceeded ` +
          "(Client.Timeout exceeded while awaiting headers)",
      });
    } finally {
      await server.close();
    }
  });
  await t.step("timeout while reading the body is an error", async () => {
    const clock = new FakeClock(0);
    let headersSent!: () => void;
    const sent = new Promise<void>((resolve) => headersSent = resolve);
    const server = await startServer((_req, w) => {
      w.writeHead(200);
      w.write("partial", () => headersSent());
    });
    try {
      const probing = newHttpProber({ clock }).probe(mustRequest(server.url), { timeoutMs: 1000 });
      await sent;
      await clock.step(1000);
      const outcome = await probing;
      assert.equal(outcome.result, "failure");
      assert.equal(outcome.output, "");
      assert.equal(
        outcome.error?.message,
        "context deadline exceeded (Client.Timeout or context cancellation while reading body)",
      );
    } finally {
      await server.close();
    }
  });
  await t.step("body cut short is an error", async () => {
    const outcome = await probeOnce((_req, w) => {
      w.writeHead(200, { "Content-Length": "100" });
      w.write("abc", () => w.destroy());
    }, {});
    assert.equal(outcome.result, "failure");
    assert.equal(outcome.output, "");
    assert.equal(outcome.error?.message, "unexpected EOF");
  });
});

Deno.test("TestHTTPProbeChecker_NonLocalRedirects", async (t) => {
  const handler: Handler = (req, w) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname === "/redirect") {
      redirect(w, url.searchParams.get("loc") ?? "", 302);
    } else if (url.pathname === "/loop") {
      redirect(w, "/loop", 302);
    } else if (url.pathname === "/success") {
      w.writeHead(200);
      w.end();
    } else {
      w.writeHead(500);
      w.end();
    }
  };
  const server = await startServer(handler);
  const newportServer = await startServer(handler);
  try {
    const newPort = newportServer.port;
    const testCases: [string, string, ProbeResult, ProbeResult][] = [
      ["local success", "/success", "success", "success"],
      ["local fail", "/fail", "failure", "failure"],
      ["newport success", `http://127.0.0.1:${newPort}/success`, "success", "success"],
      ["newport fail", `http://127.0.0.1:${newPort}/fail`, "failure", "failure"],
      ["bogus nonlocal", "http://0.0.0.0/fail", "warning", "failure"],
      ["redirect loop", "/loop", "failure", "failure"],
    ];
    for (const [desc, target, expectLocal, expectNonLocal] of testCases) {
      const url = `${server.url}/redirect?loc=${encodeURIComponent(target)}`;
      await t.step(`${desc}-local`, async () => {
        const prober = newHttpProber({ followNonLocalRedirects: false });
        const outcome = await prober.probe(mustRequest(url), { timeoutMs: 5000 });
        assert.equal(outcome.result, expectLocal, outcome.output);
      });
      await t.step(`${desc}-nonlocal`, async () => {
        const prober = newHttpProber({ followNonLocalRedirects: true });
        const outcome = await prober.probe(mustRequest(url), { timeoutMs: 5000 });
        assert.equal(outcome.result, expectNonLocal, outcome.output);
      });
    }
    await t.step("redirect loop error text", async () => {
      for (const follow of [false, true]) {
        const prober = newHttpProber({ followNonLocalRedirects: follow });
        const outcome = await prober.probe(mustRequest(`${server.url}/loop`), { timeoutMs: 5000 });
        // Go reports the Location it refused to follow, as written.
        assert.deepEqual(outcome, {
          result: "failure",
          output: 'Get "/loop": stopped after 10 redirects',
        });
      }
    });
  } finally {
    await server.close();
    await newportServer.close();
  }
});

Deno.test("TestHTTPProbeChecker redirect limit", async (t) => {
  let requests = 0;
  const server = await startServer((req, w) => {
    requests++;
    const n = Number(new URL(req.url ?? "/", "http://x").searchParams.get("n") ?? "0");
    if (n < 9) redirect(w, `/hop?n=${n + 1}`, 302);
    else w.end("arrived");
  });
  try {
    await t.step("9 redirects are followed", async () => {
      requests = 0;
      const outcome = await newHttpProber().probe(mustRequest(`${server.url}/hop?n=0`), {
        timeoutMs: 5000,
      });
      assert.deepEqual(outcome, { result: "success", output: "arrived" });
      assert.equal(requests, 10);
    });
    await t.step("the 10th redirect is refused after 10 requests", async () => {
      requests = 0;
      const outcome = await newHttpProber().probe(mustRequest(`${server.url}/hop?n=-1`), {
        timeoutMs: 5000,
      });
      assert.equal(outcome.output, 'Get "/hop?n=9": stopped after 10 redirects');
      assert.equal(requests, 10);
    });
  } finally {
    await server.close();
  }
});

Deno.test("TestHTTPProbeChecker_HostHeaderPreservedAfterRedirect", async (t) => {
  const successHostHeader = "www.success.com";
  const failHostHeader = "www.fail.com";
  const server = await startServer((req, w) => {
    if (req.url === "/success") {
      w.writeHead(goRequestHost(req) === successHostHeader ? 200 : 400);
      w.end();
    } else if (req.url === "/redirect") {
      redirect(w, "/success", 302);
    } else {
      w.writeHead(500);
      w.end();
    }
  });
  try {
    const testCases: [string, string, ProbeResult][] = [
      ["success", successHostHeader, "success"],
      ["fail", failHostHeader, "failure"],
    ];
    for (const [desc, hostHeader, expected] of testCases) {
      for (const [mode, follow] of [["local", false], ["nonlocal", true]] as const) {
        await t.step(`${desc}${mode}`, async () => {
          const prober = newHttpProber({ followNonLocalRedirects: follow });
          const request = mustRequest(`${server.url}/redirect`, { Host: [hostHeader] });
          const outcome = await prober.probe(request, { timeoutMs: 5000 });
          assert.equal(outcome.result, expected, outcome.output);
        });
      }
    }
  } finally {
    await server.close();
  }
});

Deno.test("TestHTTPProbeChecker redirect headers", async (t) => {
  const seen: Record<string, { host: string; header: Map<string, string[]> }> = {};
  const target = await startServer((req, w) => {
    seen[req.url ?? ""] = { host: goRequestHost(req), header: goRequestHeader(req) };
    w.end();
  });
  const origin = await startServer((req, w) => {
    const url = new URL(req.url ?? "/", "http://x");
    redirect(w, url.searchParams.get("loc") ?? "", 302);
  });
  const follow = newHttpProber({ followNonLocalRedirects: true });
  const probe = (loc: string, headers: HeaderInit) =>
    follow.probe(mustRequest(`${origin.url}/?loc=${encodeURIComponent(loc)}`, headers), {
      timeoutMs: 5000,
    });
  try {
    await t.step("Host header dropped after an absolute Location", async () => {
      const outcome = await probe(`${target.url}/abs`, { Host: ["www.success.com"] });
      assert.equal(outcome.result, "success");
      assert.equal(seen["/abs"].host, `127.0.0.1:${target.port}`);
    });
    await t.step("sensitive headers kept for the same host name on another port", async () => {
      await probe(`${target.url}/same`, { Authorization: ["Bearer x"], Cookie: ["a=b"] });
      assert.deepEqual(seen["/same"].header.get("Authorization"), ["Bearer x"]);
      assert.deepEqual(seen["/same"].header.get("Cookie"), ["a=b"]);
    });
    await t.step("sensitive headers dropped for another host name", async () => {
      await probe(`http://localhost:${target.port}/other`, {
        Authorization: ["Bearer x"],
        "X-Custom": ["kept"],
      });
      assert.equal(seen["/other"].header.get("Authorization"), undefined);
      assert.deepEqual(seen["/other"].header.get("X-Custom"), ["kept"]);
    });
    await t.step("Referer names the previous URL; defaults carried over", async () => {
      await probe(`${target.url}/ref`, {});
      const header = seen["/ref"].header;
      assert.deepEqual(header.get("Referer"), [
        `${origin.url}/?loc=${encodeURIComponent(`${target.url}/ref`)}`,
      ]);
      assert.deepEqual(header.get("User-Agent"), ["kube-probe/1.36"]);
      assert.deepEqual(header.get("Accept"), ["*/*"]);
    });
    await t.step("non-local redirect not followed by kubelet's default", async () => {
      const outcome = await newHttpProber().probe(
        mustRequest(`${origin.url}/?loc=${encodeURIComponent(`http://localhost:1/x`)}`),
        { timeoutMs: 5000 },
      );
      assert.equal(outcome.result, "warning");
      assert.ok(outcome.output.startsWith("Probe terminated redirects, Response body: <a href="));
    });
  } finally {
    await target.close();
    await origin.close();
  }
});

Deno.test("TestHTTPProbeChecker_PayloadTruncated", async () => {
  const successHostHeader = "www.success.com";
  const oversizePayload = "a".repeat(maxRespBodyLength + 1);
  const truncatedPayload = "a".repeat(maxRespBodyLength);
  const outcome = await probeOnce((req, w) => {
    if (req.url === "/success" && goRequestHost(req) === successHostHeader) {
      w.writeHead(200);
      w.end(oversizePayload);
    } else {
      w.writeHead(400);
      w.end();
    }
  }, { path: "/success", headers: { Host: [successHostHeader] }, timeoutMs: 5000 });
  assert.equal(outcome.error, undefined);
  assert.equal(outcome.result, "success");
  assert.equal(outcome.output, truncatedPayload);
});

Deno.test("TestHTTPProbeChecker_PayloadNormal", async () => {
  const successHostHeader = "www.success.com";
  const normalPayload = "a".repeat(maxRespBodyLength - 1);
  const outcome = await probeOnce((req, w) => {
    if (req.url === "/success" && goRequestHost(req) === successHostHeader) {
      w.writeHead(200);
      w.end(normalPayload);
    } else {
      w.writeHead(400);
      w.end();
    }
  }, { path: "/success", headers: { Host: [successHostHeader] }, timeoutMs: 5000 });
  assert.equal(outcome.error, undefined);
  assert.equal(outcome.result, "success");
  assert.equal(outcome.output, normalPayload);
});

Deno.test("TestHTTPProbeChecker 10 KiB truncation", async (t) => {
  for (
    const [name, size, expected] of [
      ["exactly 10240 bytes is whole", 10240, 10240],
      ["large chunked body cut at 10240", 1 << 20, 10240],
    ] as const
  ) {
    await t.step(name, async () => {
      const outcome = await probeOnce((_req, w) => {
        w.writeHead(200);
        // Several writes, so the cut falls inside a chunk.
        for (let sent = 0; sent < size; sent += 3000) {
          w.write("b".repeat(Math.min(3000, size - sent)));
        }
        w.end();
      }, {});
      assert.equal(outcome.error, undefined);
      assert.equal(outcome.result, "success");
      assert.equal(outcome.output, "b".repeat(expected));
    });
  }
  await t.step("response headers beyond Node's 16 KiB default accepted, as Go does", async () => {
    const outcome = await probeOnce((_req, w) => {
      w.setHeader("X-Big", "h".repeat(64 * 1024));
      w.end("ok");
    }, {});
    assert.deepEqual(outcome, { result: "success", output: "ok" });
  });
  await t.step("truncated redirect body in a Warning", async () => {
    const outcome = await probeOnce((_req, w) => {
      w.writeHead(302);
      w.end("c".repeat(20000));
    }, {});
    assert.equal(outcome.result, "warning");
    assert.equal(outcome.output, `Probe terminated redirects, Response body: ${"c".repeat(10240)}`);
  });
});

// Probes /healthz?x=1 on a recording server and checks the exact request head Go writes; `more`
// checks the server's other records.
async function checkDefaultWire(
  options: { tls?: boolean },
  more?: (server: RecordingServer) => void,
): Promise<void> {
  const server = await startRecordingServer(options);
  try {
    const outcome = await newHttpProber().probe(mustRequest(`${server.url}/healthz?x=1`), {
      timeoutMs: 2000,
    });
    assert.deepEqual(outcome, { result: "success", output: "ok" });
    assert.deepEqual(server.requests, [
      "GET /healthz?x=1 HTTP/1.1\r\n" +
      `Host: 127.0.0.1:${server.port}\r\n` +
      "User-Agent: kube-probe/1.36\r\n" +
      "Accept: */*\r\n" +
      "Connection: close\r\n\r\n",
    ]);
    more?.(server);
  } finally {
    await server.close();
  }
}

Deno.test("TestHTTPProbe wire format", async (t) => {
  await t.step("default headers are exactly Host, User-Agent, Accept, Connection", async () => {
    await checkDefaultWire({});
  });
  await t.step("custom headers sorted, repeated values kept, Host never twice", async () => {
    const server = await startRecordingServer();
    try {
      const headers: HeaderInit = [["x-b", "2"], ["X-A", "1"], ["x-b", "3"], ["HOST", "h.example"]];
      await newHttpProber().probe(mustRequest(`${server.url}`, headers), { timeoutMs: 1000 });
      assert.deepEqual(server.requests, [
        "GET / HTTP/1.1\r\n" +
        "Host: h.example\r\n" +
        "User-Agent: kube-probe/1.36\r\n" +
        "Accept: */*\r\n" +
        "X-A: 1\r\n" +
        "X-B: 2\r\n" +
        "X-B: 3\r\n" +
        "Connection: close\r\n\r\n",
      ]);
    } finally {
      await server.close();
    }
  });
  await t.step("one connection per probe", async () => {
    const server = await startRecordingServer();
    try {
      const prober = newHttpProber();
      for (let i = 0; i < 3; i++) {
        await prober.probe(mustRequest(server.url), { timeoutMs: 1000 });
      }
      assert.equal(server.requests.length, 3);
      assert.equal(server.connections, 3);
    } finally {
      await server.close();
    }
  });
  for (const port of [6000, 10080]) {
    await t.step(`port ${port}, which fetch refuses`, async (t) => {
      let server;
      try {
        server = await startRecordingServer({ port });
      } catch (e) {
        console.log(`skipping port ${port}: cannot bind (${(e as Error).message})`);
        return;
      }
      try {
        const outcome = await newHttpProber().probe(mustRequest(server.url), { timeoutMs: 1000 });
        assert.deepEqual(outcome, { result: "success", output: "ok" }, t.name);
        assert.equal(server.requests.length, 1);
      } finally {
        await server.close();
      }
    });
  }
});

Deno.test("TestHTTPProbe HTTPS", async (t) => {
  const server = await startTLSServer((req: http.IncomingMessage, w) => {
    w.end(`tls ${goRequestHost(req)} ${req.url}`);
  });
  try {
    await t.step("self-signed certificate accepted", async () => {
      const outcome = await newHttpProber().probe(mustRequest(`${server.url}/secure`), {
        timeoutMs: 2000,
      });
      assert.deepEqual(outcome, {
        result: "success",
        output: `tls 127.0.0.1:${server.port} /secure`,
      });
    });
    await t.step("plain HTTP server behind an https URL", async () => {
      const plain = await startServer((_req, w) => w.end("plain"));
      try {
        const url = plain.url.replace("http:", "https:");
        const outcome = await newHttpProber().probe(mustRequest(url), { timeoutMs: 2000 });
        // net/http recognises "HTTP/" as the first record header.
        assert.deepEqual(outcome, {
          result: "failure",
          output: `Get "${url}": http: server gave HTTP response to HTTPS client`,
        });
      } finally {
        await plain.close();
      }
    });
    // Each answer is written after the ClientHello arrives; Go judges the first 5 bytes.
    const cases: [string, number[], string][] = [
      [
        "random bytes",
        [0x37, 0x9a, 0x01, 0xff, 0x22, 1, 2, 3],
        "tls: first record does not look like a TLS handshake",
      ],
      [
        "handshake type, version 16.0",
        [22, 0x10, 0x00, 0, 4, 1, 2, 3, 4],
        "tls: first record does not look like a TLS handshake",
      ],
      ["SSLv2 header", [0x80, 0x2e, 0x01, 0x03, 0x01], "tls: unsupported SSLv2 handshake received"],
      [
        "oversized record",
        [22, 3, 3, 0xff, 0xff],
        "tls: oversized record received with length 65535",
      ],
    ];
    for (const [name, bytes, text] of cases) {
      await t.step(`server answering ${name}`, async () => {
        const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
        const serving = (async () => {
          for await (const conn of listener) {
            await conn.read(new Uint8Array(4096)).catch(() => null);
            await conn.write(new Uint8Array(bytes)).catch(() => 0);
            conn.close();
          }
        })();
        try {
          const url = `https://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/`;
          const outcome = await newHttpProber().probe(mustRequest(url), { timeoutMs: 2000 });
          assert.deepEqual(outcome, { result: "failure", output: `Get "${url}": ${text}` });
        } finally {
          listener.close();
          await serving.catch(() => {});
        }
      });
    }
    await t.step("connection refused", async () => {
      const outcome = await newHttpProber().probe(mustRequest("https://127.0.0.1:1/"), {
        timeoutMs: 1000,
      });
      assert.deepEqual(outcome, {
        result: "failure",
        output: 'Get "https://127.0.0.1:1/": dial tcp 127.0.0.1:1: connect: connection refused',
      });
    });
  } finally {
    await server.close();
  }
});

Deno.test("TestHTTPProbe HTTPS wire format", async (t) => {
  await t.step("request bytes as over HTTP; ALPN http/1.1; no SNI for an IP", async () => {
    await checkDefaultWire({ tls: true }, (server) => {
      assert.deepEqual(server.alpnProtocols, ["http/1.1"]);
      assert.deepEqual(server.servernames, [false]);
    });
  });
  await t.step("SNI carries a host name", async () => {
    const server = await startRecordingServer({ tls: true });
    try {
      const url = `https://localhost:${server.port}/`;
      const outcome = await newHttpProber().probe(mustRequest(url), { timeoutMs: 2000 });
      assert.deepEqual(outcome, { result: "success", output: "ok" });
      assert.deepEqual(server.servernames, ["localhost"]);
    } finally {
      await server.close();
    }
  });
  await t.step("one connection per probe", async () => {
    const server = await startRecordingServer({ tls: true });
    try {
      const prober = newHttpProber();
      for (let i = 0; i < 3; i++) {
        await prober.probe(mustRequest(server.url), { timeoutMs: 2000 });
      }
      assert.equal(server.requests.length, 3);
      assert.equal(server.connections, 3);
    } finally {
      await server.close();
    }
  });
  await t.step("chunked body cut at 10 KiB", async () => {
    const server = await startTLSServer((_req, w) => {
      w.writeHead(200);
      for (let sent = 0; sent < 1 << 20; sent += 3000) w.write("b".repeat(3000));
      w.end();
    });
    try {
      const outcome = await newHttpProber().probe(mustRequest(server.url), { timeoutMs: 5000 });
      assert.deepEqual(outcome, { result: "success", output: "b".repeat(maxRespBodyLength) });
    } finally {
      await server.close();
    }
  });
  await t.step("status and redirect handled as over HTTP", async () => {
    const target = await startServer((req, w) => w.end(`referer=${req.headers.referer ?? ""}`));
    const server = await startTLSServer((req, w) => {
      if (req.url === "/fail") {
        w.writeHead(503);
        w.end("down");
      } else {
        redirect(w, `${target.url}/to-plain`, 302);
      }
    });
    try {
      const failed = await newHttpProber().probe(mustRequest(`${server.url}/fail`), {
        timeoutMs: 2000,
      });
      assert.deepEqual(failed, {
        result: "failure",
        output: "HTTP probe failed with statuscode: 503",
      });
      // Same host name, so followed; no Referer from an https page to an http one.
      const followed = await newHttpProber().probe(mustRequest(`${server.url}/r`), {
        timeoutMs: 2000,
      });
      assert.deepEqual(followed, { result: "success", output: "referer=" });
    } finally {
      await server.close();
      await target.close();
    }
  });
  await t.step("server closing during the handshake reads as Go's EOF", async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const serving = (async () => {
      for await (const conn of listener) {
        await conn.read(new Uint8Array(4096)).catch(() => null);
        conn.close();
      }
    })();
    try {
      const url = `https://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/`;
      const outcome = await newHttpProber().probe(mustRequest(url), { timeoutMs: 2000 });
      assert.deepEqual(outcome, { result: "failure", output: `Get "${url}": EOF` });
    } finally {
      listener.close();
      await serving.catch(() => {});
    }
  });
  await t.step("handshake that never ends: timeout on the injected clock", async () => {
    const clock = new FakeClock(0);
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    let helloArrived!: () => void;
    const hello = new Promise<void>((resolve) => helloArrived = resolve);
    const held: Deno.Conn[] = [];
    const serving = (async () => {
      for await (const conn of listener) {
        held.push(conn);
        await conn.read(new Uint8Array(4096)).catch(() => null);
        helloArrived();
      }
    })();
    try {
      const url = `https://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/`;
      const probing = newHttpProber({ clock }).probe(mustRequest(url), { timeoutMs: 1000 });
      await hello;
      let settled = false;
      probing.then(() => settled = true);
      await clock.step(999);
      assert.equal(settled, false, "probe ended before its deadline");
      await clock.step(1);
      assert.deepEqual(await probing, {
        result: "failure",
        output: `Get "${url}": context deadline exceeded ` +
          "(Client.Timeout exceeded while awaiting headers)",
      });
    } finally {
      listener.close();
      for (const conn of held) conn.close();
      await serving.catch(() => {});
    }
  });
});

Deno.test("TestHTTPProbe IPv6 server", async (t) => {
  let server;
  try {
    server = await startServer((req, w) => w.end(`v6 ${goRequestHost(req)}`), { host: "::1" });
  } catch (e) {
    console.log(`skipping: cannot bind [::1] (${(e as Error).message})`);
    return;
  }
  try {
    await t.step("bracketed literal in URL and Host header", async () => {
      const outcome = await newHttpProber().probe(mustRequest(`http://[::1]:${server.port}/`), {
        timeoutMs: 1000,
      });
      assert.deepEqual(outcome, { result: "success", output: `v6 [::1]:${server.port}` });
    });
  } finally {
    await server.close();
  }
});

// A raw server on 127.0.0.1 that reads the request head and answers with fixed bytes.
async function rawAnswer(answer: string, probe: (url: string) => Promise<void>): Promise<void> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    for await (const conn of listener) {
      const buf = new Uint8Array(8192);
      let seen = "";
      while (!seen.includes("\r\n\r\n")) {
        const n = await conn.read(buf).catch(() => null);
        if (n === null) break;
        seen += new TextDecoder().decode(buf.subarray(0, n));
      }
      await conn.write(new TextEncoder().encode(answer)).catch(() => 0);
      conn.close();
    }
  })();
  try {
    await probe(`http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/`);
  } finally {
    listener.close();
    await serving.catch(() => {});
  }
}

Deno.test("TestHTTPProbe response framing", async (t) => {
  const cases: [string, string, ProbeOutcome | ((url: string) => ProbeOutcome)][] = [
    [
      "1xx answers are skipped",
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      { result: "success", output: "ok" },
    ],
    [
      "chunked body",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n3;x=y\r\n!!!\r\n0\r\n\r\n",
      { result: "success", output: "ok!!!" },
    ],
    [
      "body until the connection ends",
      "HTTP/1.0 200 OK\r\n\r\nuntil close",
      { result: "success", output: "until close" },
    ],
    [
      "Content-Length shorter than the data",
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef",
      { result: "success", output: "abc" },
    ],
    [
      "malformed status line",
      "garbage\r\n\r\n",
      (url) => ({
        result: "failure",
        output:
          `Get "${url}": net/http: HTTP/1.x transport connection broken: malformed HTTP response "garbage"`,
      }),
    ],
    [
      "malformed status code",
      "HTTP/1.1 2x0 OK\r\n\r\n",
      (url) => ({
        result: "failure",
        output:
          `Get "${url}": net/http: HTTP/1.x transport connection broken: malformed HTTP status code "2x0"`,
      }),
    ],
    [
      "closed in the middle of a header name: the partial line is parsed, as Go's ReadLine",
      "HTTP/1.1 200 OK\r\nContent-Le",
      (url) => ({
        result: "failure",
        output: `Get "${url}": net/http: HTTP/1.x transport connection broken: ` +
          `malformed MIME header: missing colon: "Content-Le"`,
      }),
    ],
    [
      "redirect without Location is final",
      "HTTP/1.1 302 Found\r\nContent-Length: 4\r\n\r\nmove",
      { result: "warning", output: "Probe terminated redirects, Response body: move" },
    ],
  ];
  for (const [name, answer, expected] of cases) {
    await t.step(name, async () => {
      await rawAnswer(answer, async (url) => {
        const outcome = await newHttpProber().probe(mustRequest(url), { timeoutMs: 2000 });
        assert.deepEqual(outcome, typeof expected === "function" ? expected(url) : expected);
      });
    });
  }
});
