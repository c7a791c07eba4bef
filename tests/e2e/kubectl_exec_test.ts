// kubectl exec, attach and port-forward against a probelet node on the local control plane, with
// containerd: the API server reaches the agent's secure port at the node's InternalIP
// (scripts/kube-apiserver.sh puts 10.88.99.1 on its own interface probelet-kube0) with its kubelet
// client certificate; the agent asks containerd for a streaming URL (CRI Exec/Attach/PortForward)
// and proxies the upgraded SPDY connection to containerd's streaming server on 127.0.0.1. Checked
// with kubectl: output, exit code, stdin, a TTY (through script(1)), attach, a port-forward
// carrying an HTTP request; /run on the secure port; and an ordinary user refused with kubelet's
// 403 text.
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { runKubelet, type RunningKubelet } from "../../src/cmd/probelet/app.ts";
import * as log from "../../src/util/log.ts";
import { realKubeApiServer } from "../testing/apiserver_targets.ts";
import { integrationSkipReason, testImage } from "../integration/helpers.ts";
import { waitFor } from "./helpers.ts";
import {
  have,
  kubeApiPki,
  kubectl as kubectlCommand,
  nodeIP,
  run,
  secureAgentOptions,
  secureNodeSkipReason,
  waitForSecurePort,
} from "./secure_node.ts";

const real = await realKubeApiServer();
const pki = kubeApiPki;
const haveTools = await have("openssl", ["version"]) && await have("curl", ["--version"]);
const skip = await secureNodeSkipReason(real) ||
  (!haveTools ? "openssl or curl not found" : await integrationSkipReason() ?? "");
if (skip) console.log(`kubectl_exec_test: skipped: ${skip}`);

const dec = new TextDecoder();

function kubectl(kubeconfig: string, args: string[], stdin?: string) {
  return kubectlCommand(kubeconfig, args, { stdin, timeout: "30s" });
}

// "app" serves /www on 8080 with busybox httpd and waits; "talker" prints a numbered line five
// times a second (for attach).
function podManifest(node: string): unknown {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "shell", namespace: "default" },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      tolerations: [{ operator: "Exists" }],
      containers: [{
        name: "app",
        image: testImage,
        imagePullPolicy: "Never",
        command: [
          "sh",
          "-c",
          "mkdir -p /www && echo served-through-port-forward > /www/index.html && " +
          "exec httpd -f -p 8080 -h /www",
        ],
      }, {
        name: "talker",
        image: testImage,
        imagePullPolicy: "Never",
        command: ["sh", "-c", "i=0; while true; do i=$((i+1)); echo talk $i; sleep 0.2; done"],
      }],
    },
  };
}

// A client certificate for an ordinary user (CN=alice, O=developers), signed by the cluster CA the
// agent trusts: authenticated, but with no rights on nodes/proxy.
async function aliceCert(dir: string): Promise<{ cert: string; key: string }> {
  const key = join(dir, "alice.key");
  const csr = join(dir, "alice.csr");
  const cert = join(dir, "alice.crt");
  const steps = [
    ["genrsa", "-out", key, "2048"],
    ["req", "-new", "-key", key, "-subj", "/CN=alice/O=developers", "-out", csr],
    [
      "x509",
      "-req",
      "-in",
      csr,
      "-CA",
      join(pki, "ca.crt"),
      "-CAkey",
      join(pki, "ca.key"),
      "-CAcreateserial",
      "-CAserial",
      join(dir, "ca.srl"),
      "-days",
      "1",
      "-out",
      cert,
    ],
  ];
  for (const args of steps) {
    const r = await run("openssl", args);
    assert(r.code === 0, r.stderr);
  }
  return { cert, key };
}

Deno.test({
  name: "kubectl exec, attach and port-forward on a probelet node (containerd, kube-apiserver)",
  ignore: skip !== "",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const api = real as Exclude<typeof real, string>;
    const admin = api.adminKubeconfig;
    const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
    const dir = await Deno.makeTempDir({ prefix: "probelet-exec-" });
    await Deno.mkdir(join(dir, "pods"));
    await kubectl(admin, ["delete", "pod", "shell", "--grace-period=0", "--force"]);
    await api.admin("DELETE", `/api/v1/nodes/${api.nodeName}`);
    let agent: RunningKubelet | undefined;
    const children: Deno.ChildProcess[] = [];
    try {
      agent = await runKubelet(secureAgentOptions(api, dir));
      const securePort = agent.secureServer!.port;
      await waitForSecurePort(api, agent);
      const created = await api.admin("POST", "/api/v1/namespaces/default/pods", {
        body: podManifest(api.nodeName),
      });
      assert(created.status === 201, JSON.stringify(created.body));
      await waitFor("both containers running", async () => {
        const p = (await api.admin("GET", "/api/v1/namespaces/default/pods/shell")).body;
        const statuses = p?.status?.containerStatuses ?? [];
        return statuses.length === 2 &&
          statuses.every((s: { state?: { running?: unknown } }) => s.state?.running);
      }, { timeoutMs: 60_000 });

      // Output: the command's stdout comes back through the API server, the agent and containerd.
      const hostname = await kubectl(admin, [
        "exec",
        "shell",
        "-c",
        "app",
        "--",
        "cat",
        "/etc/hostname",
      ]);
      assertEquals([hostname.code, hostname.stdout.trim(), hostname.stderr], [0, "shell", ""]);

      // The exit code comes back in the error stream's status.
      const exit3 = await kubectl(admin, [
        "exec",
        "shell",
        "-c",
        "app",
        "--",
        "sh",
        "-c",
        "exit 3",
      ]);
      assertEquals(exit3.code, 3, exit3.stderr);
      assert(exit3.stderr.includes("command terminated with exit code 3"), exit3.stderr);

      // stdin reaches the command; stderr comes back apart.
      const stdin = await kubectl(admin, [
        "exec",
        "-i",
        "shell",
        "-c",
        "app",
        "--",
        "sh",
        "-c",
        "cat; echo to-stderr >&2",
      ], "hi\n");
      assertEquals([stdin.code, stdin.stdout, stdin.stderr], [0, "hi\n", "to-stderr\n"]);

      // -it: a TTY inside (script(1) gives kubectl a terminal of its own), and the command's
      // output comes back through it (CRLF line ends: the container's terminal).
      const tty = await run("script", [
        "-qec",
        `kubectl --kubeconfig ${admin} exec -it shell -c app -- sh -c 'tty; echo tty-done'`,
        "/dev/null",
      ]);
      assertEquals(tty.code, 0, tty.stdout + tty.stderr);
      assert(/\/dev\/pts\/\d+\r?\n/.test(tty.stdout), tty.stdout);
      assert(tty.stdout.includes("tty-done"), tty.stdout);

      // attach: the running process's output, live.
      const attach = new Deno.Command("kubectl", {
        args: ["--kubeconfig", admin, "attach", "shell", "-c", "talker"],
        stdout: "piped",
        stderr: "null",
      }).spawn();
      children.push(attach);
      const reader = attach.stdout.getReader();
      let attached = "";
      while ((attached.match(/talk \d+\n/g) ?? []).length < 3) {
        const { value, done } = await reader.read();
        if (done) break;
        attached += dec.decode(value);
      }
      attach.kill("SIGTERM");
      await reader.cancel().catch(() => {});
      await attach.status;
      const numbers = [...attached.matchAll(/talk (\d+)/g)].map((m) => Number(m[1]));
      assert(numbers.length >= 3 && numbers.at(-1)! > numbers[0], attached);

      // port-forward: an HTTP request to httpd in the pod, from 127.0.0.1 on this side.
      const forward = new Deno.Command("kubectl", {
        args: [
          "--kubeconfig",
          admin,
          "port-forward",
          "pod/shell",
          "--address",
          "127.0.0.1",
          ":8080",
        ],
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      children.push(forward);
      const fwdReader = forward.stdout.getReader();
      let announced = "";
      let localPort = 0;
      while (localPort === 0) {
        const { value, done } = await fwdReader.read();
        if (done) break;
        announced += dec.decode(value);
        localPort = Number(announced.match(/Forwarding from 127\.0\.0\.1:(\d+) -> 8080/)?.[1] ?? 0);
      }
      assert(localPort > 0, announced);
      const page = await fetch(`http://127.0.0.1:${localPort}/index.html`);
      assertEquals([page.status, await page.text()], [200, "served-through-port-forward\n"]);
      // A second request on a new connection: a new stream pair on the same upgraded connection.
      const again = await fetch(`http://127.0.0.1:${localPort}/index.html`);
      assertEquals(await again.text(), "served-through-port-forward\n");
      forward.kill("SIGTERM");
      await fwdReader.cancel().catch(() => {});
      await forward.status;

      // The secure port itself: /run for the API server's certificate, kubelet's 403 for alice.
      const curl = async (cert: { cert: string; key: string }, path: string) => {
        const r = await run("curl", [
          "-sk",
          "-X",
          "POST",
          "--cert",
          cert.cert,
          "--key",
          cert.key,
          "-w",
          "\n%{http_code}",
          `https://${nodeIP}:${securePort}${path}`,
        ]);
        return r.stdout;
      };
      const kubeletClient = {
        cert: join(pki, "kubelet-client.crt"),
        key: join(pki, "kubelet-client.key"),
      };
      assertEquals(
        await curl(kubeletClient, "/run/default/shell/app?cmd=cat%20/etc/hostname"),
        "shell\n\n200",
      );
      const alice = await aliceCert(dir);
      assertEquals(
        await curl(alice, "/exec/default/shell/app?command=true&output=1"),
        "Forbidden (user=alice, verb=create, resource=nodes, subresource(s)=[proxy])\n\n403",
      );
      assertEquals(
        await curl(alice, "/run/default/shell/app?cmd=true"),
        "Forbidden (user=alice, verb=create, resource=nodes, subresource(s)=[proxy])\n\n403",
      );
    } finally {
      for (const c of children) {
        try {
          c.kill("SIGKILL");
        } catch {
          // ended
        }
      }
      await kubectl(admin, ["delete", "pod", "shell", "--grace-period=0", "--force"]);
      await agent?.stop();
      if (quiet) log.setLogSink(quiet);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

// The same commands on the embedded runtime: its own streaming server (src/cri_streaming) answers
// CRI Exec and PortForward with URLs on 127.0.0.1, and the agent proxies to it exactly as to
// containerd's. The "container" is a host process; port-forward dials 127.0.0.1 on the host.
const embeddedSkip = await secureNodeSkipReason(real) ||
  (!await have("busybox", ["true"])
    ? "busybox not found (the host process serves HTTP with busybox httpd)"
    : "");
if (embeddedSkip) console.log(`kubectl_exec_test (embedded): skipped: ${embeddedSkip}`);

Deno.test({
  name: "kubectl exec and port-forward on the embedded runtime (kube-apiserver)",
  ignore: embeddedSkip !== "",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const api = real as Exclude<typeof real, string>;
    const admin = api.adminKubeconfig;
    const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
    const dir = await Deno.makeTempDir({ prefix: "probelet-exec-embedded-" });
    await Deno.mkdir(join(dir, "pods"));
    await Deno.mkdir(join(dir, "www"));
    await Deno.writeTextFile(join(dir, "www", "index.html"), "served-by-a-host-process\n");
    // A free port below 32768 for httpd: bound by the kernel, then released.
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const httpPort = 20000 + ((probe.addr as Deno.NetAddr).port % 10000);
    probe.close();
    await kubectl(admin, ["delete", "pod", "hostshell", "--grace-period=0", "--force"]);
    await api.admin("DELETE", `/api/v1/nodes/${api.nodeName}`);
    let agent: RunningKubelet | undefined;
    const children: Deno.ChildProcess[] = [];
    try {
      agent = await runKubelet(
        secureAgentOptions(api, dir, { containerRuntimeEndpoint: "", stopPodsOnExit: true }),
      );
      await waitForSecurePort(api, agent);
      const created = await api.admin("POST", "/api/v1/namespaces/default/pods", {
        body: {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "hostshell", namespace: "default" },
          spec: {
            nodeName: api.nodeName,
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            // The embedded runtime runs only pods that name its taint in a toleration.
            tolerations: [{ key: "probelet.io/agent", operator: "Exists" }],
            containers: [{
              name: "app",
              image: "probelet.local/host",
              command: [
                "busybox",
                "httpd",
                "-f",
                "-p",
                `127.0.0.1:${httpPort}`,
                "-h",
                join(dir, "www"),
              ],
            }],
          },
        },
      });
      assert(created.status === 201, JSON.stringify(created.body));
      let last = "";
      await waitFor("the host process running", async () => {
        const p = (await api.admin("GET", "/api/v1/namespaces/default/pods/hostshell")).body;
        last = JSON.stringify(p?.status);
        return p?.status?.containerStatuses?.[0]?.state?.running;
      }, { timeoutMs: 60_000 }).catch((e) => {
        throw new Error(`${e.message}: ${last}`);
      });

      const echo = await kubectl(admin, ["exec", "hostshell", "--", "echo", "from-the-host"]);
      assertEquals([echo.code, echo.stdout, echo.stderr], [0, "from-the-host\n", ""]);
      const exit3 = await kubectl(admin, ["exec", "hostshell", "--", "sh", "-c", "exit 3"]);
      assertEquals(exit3.code, 3, exit3.stderr);
      const stdin = await kubectl(admin, ["exec", "-i", "hostshell", "--", "cat"], "hi\n");
      assertEquals([stdin.code, stdin.stdout], [0, "hi\n"]);

      const forward = new Deno.Command("kubectl", {
        args: [
          "--kubeconfig",
          admin,
          "port-forward",
          "pod/hostshell",
          "--address",
          "127.0.0.1",
          `:${httpPort}`,
        ],
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      children.push(forward);
      const fwdReader = forward.stdout.getReader();
      let announced = "";
      let localPort = 0;
      const re = new RegExp(`Forwarding from 127\\.0\\.0\\.1:(\\d+) -> ${httpPort}`);
      while (localPort === 0) {
        const { value, done } = await fwdReader.read();
        if (done) break;
        announced += dec.decode(value);
        localPort = Number(announced.match(re)?.[1] ?? 0);
      }
      assert(localPort > 0, announced);
      const page = await fetch(`http://127.0.0.1:${localPort}/index.html`);
      assertEquals([page.status, await page.text()], [200, "served-by-a-host-process\n"]);
      forward.kill("SIGTERM");
      await fwdReader.cancel().catch(() => {});
      await forward.status;
    } finally {
      for (const c of children) {
        try {
          c.kill("SIGKILL");
        } catch {
          // ended
        }
      }
      await kubectl(admin, ["delete", "pod", "hostshell", "--grace-period=0", "--force"]);
      await agent?.stop();
      if (quiet) log.setLogSink(quiet);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
