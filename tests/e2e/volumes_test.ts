/**
 * Volumes end to end on the local control plane (scripts/kube-apiserver.sh up + controllers: the
 * node authorizer and NodeRestriction on) with the private containerd: a Deployment whose pod
 * mounts a configMap, a secret, the downward API, a memory emptyDir and the `kube-api-access-*`
 * volume the API server injects runs on probelet, and its container reads each of them (checked
 * inside the container through CRI ExecSync). Then a config map update reaches the file through the
 * `..data` swap; a pod whose config map is missing waits with `FailedMount`; an agent restart keeps
 * the running pod's volumes and cleans those of a pod deleted while it was down; deleting the
 * Deployment unmounts and removes its volume folders. Skipped, saying why, without root, containerd,
 * the control plane with its controllers, or kubectl.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { runKubelet, type RunningKubelet } from "../../src/cmd/probelet/app.ts";
import type { RuntimeService } from "../../src/cri_client/runtime_service.ts";
import * as log from "../../src/util/log.ts";
import { listMountPoints } from "../../src/volume/volume.ts";
import {
  connectRuntime,
  criEndpoint,
  integrationSkipReason,
  testImage,
} from "../integration/helpers.ts";
import { realKubeApiServer } from "../testing/apiserver_targets.ts";
import { waitFor } from "./helpers.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

async function skipReason(): Promise<string> {
  const cri = await integrationSkipReason();
  if (cri) return cri;
  const real = await realKubeApiServer();
  if (typeof real === "string") return real;
  await real.close();
  if (!(await real.controllersRunning())) {
    return "the local kube-apiserver runs without kube-controller-manager/kube-scheduler";
  }
  const kubectl = await new Deno.Command("sh", { args: ["-c", "command -v kubectl"] }).output();
  return kubectl.success ? "" : "kubectl is not on PATH";
}

const skip = await skipReason();
if (skip) console.log(`tests/e2e/volumes_test.ts: skipped: ${skip}`);

async function run(cmd: string, args: string[], stdin?: string): Promise<string> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")}: ${dec.decode(out.stderr).trim()}`);
  return dec.decode(out.stdout);
}

function b64url(s: string): string {
  return new TextDecoder().decode(
    Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0)),
  );
}

Deno.test({
  name: "volumes: configMap, secret, downward API and the service-account token in a container",
  ignore: skip !== "",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const real = await realKubeApiServer();
    if (typeof real === "string") throw new Error(real);
    await real.close();
    const kubeconfig = real.adminKubeconfig;
    const k = (args: string[], stdin?: string) =>
      run("kubectl", ["--kubeconfig", kubeconfig, ...args], stdin);
    const kj = async (args: string[]): Promise<Json> =>
      JSON.parse(await k([...args, "-o", "json"]));
    const ns = `vol-e2e-${Date.now()}`;
    const dir = await Deno.makeTempDir({ prefix: "probelet-volumes-e2e-" });
    const rootDir = join(dir, "root");
    const podsDir = join(rootDir, "pods");
    const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
    let agent: RunningKubelet | undefined;
    let runtime: RuntimeService | undefined;
    const startAgent = () =>
      runKubelet({
        kubeconfig: real.nodeKubeconfig,
        nodeName: real.nodeName,
        containerRuntimeEndpoint: criEndpoint(),
        rootDir,
        port: 0,
        address: "127.0.0.1",
        stopPodsOnExit: false,
        syncFrequencyMs: 5_000,
      });
    try {
      runtime = await connectRuntime();
      // A Node of our own, Ready and without NoExecute taints, before any pod: the CLI e2e that
      // runs before this test registers the same node name on the embedded runtime, with its
      // `probelet.io/agent` NoExecute taint, which a re-registration keeps (taints are the Node's);
      // pods bound meanwhile would be rejected (TaintToleration) in a loop.
      await k(["delete", "node", real.nodeName, "--ignore-not-found"]);
      const shared = join(dir, "shared");
      await Deno.mkdir(shared);
      await run("mount", ["--bind", shared, shared]);
      await run("mount", ["--make-shared", shared]);
      agent = await startAgent();
      await waitFor("the Node Ready and without NoExecute taints", async () => {
        const node = await kj(["get", "node", real.nodeName]).catch(() => undefined);
        const ready = node?.status?.conditions?.find((c: Json) => c.type === "Ready")?.status;
        const noExecute = (node?.spec?.taints ?? []).filter((t: Json) => t.effect === "NoExecute");
        return ready === "True" && noExecute.length === 0;
      }, { timeoutMs: 90_000 });
      await k(["create", "namespace", ns]);
      await k([
        "-n",
        ns,
        "create",
        "configmap",
        "app-config",
        "--from-literal=app.conf=greeting=hello",
      ]);
      await k([
        "-n",
        ns,
        "create",
        "secret",
        "generic",
        "app-secret",
        "--from-literal=password=s3cr3t",
      ]);
      const podTemplate = (name: string, volumes: Json[], mounts: Json[]) => ({
        metadata: { labels: { app: name } },
        spec: {
          nodeName: real.nodeName,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: 2,
          containers: [{
            name: "app",
            image: testImage,
            imagePullPolicy: "Never",
            command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"],
            env: [{ name: "SUB_DIR", value: "web" }],
            volumeMounts: mounts,
          }],
          volumes,
        },
      });
      await k(
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "vols", namespace: ns },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: "vols" } },
            template: podTemplate("vols", [
              { name: "cfg", configMap: { name: "app-config" } },
              {
                name: "sec",
                secret: {
                  secretName: "app-secret",
                  items: [{ key: "password", path: "db/password", mode: 0o400 }],
                },
              },
              {
                name: "info",
                downwardAPI: {
                  items: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }, {
                    path: "name",
                    fieldRef: { fieldPath: "metadata.name" },
                  }],
                },
              },
              { name: "cache", emptyDir: { medium: "Memory", sizeLimit: "16Mi" } },
              {
                name: "made",
                hostPath: { path: join(dir, "made/here"), type: "DirectoryOrCreate" },
              },
              // HostToContainer needs a shared (or slave) mount at the host path.
              { name: "host", hostPath: { path: join(dir, "shared"), type: "Directory" } },
            ], [
              { name: "cfg", mountPath: "/etc/config" },
              { name: "sec", mountPath: "/etc/secret", readOnly: true },
              { name: "info", mountPath: "/etc/podinfo" },
              { name: "cache", mountPath: "/cache" },
              { name: "cache", mountPath: "/sub", subPathExpr: "data/$(SUB_DIR)" },
              { name: "made", mountPath: "/made" },
              { name: "host", mountPath: "/host", mountPropagation: "HostToContainer" },
            ]),
          },
        }),
      );
      let lastSeen: Json = undefined;
      const pod: Json = await waitFor("the Deployment's pod Running and Ready", async () => {
        const list = await kj(["-n", ns, "get", "pods", "-l", "app=vols"]);
        const p = list.items[0];
        lastSeen = p && { name: p.metadata.name, node: p.spec.nodeName, status: p.status };
        const ready = p?.status?.conditions?.find((c: Json) => c.type === "Ready")?.status;
        return p?.status?.phase === "Running" && ready === "True" && p;
      }, {
        timeoutMs: 60_000,
        // The pod as the API shows it, and what the agent knows of it.
        describe: () => ({
          pod: lastSeen,
          agent: agent?.kubelet.pods().filter((p) => p.metadata.namespace === ns).map((p) => ({
            name: p.metadata.name,
            status: p.status,
          })),
        }),
      });
      const uid = pod.metadata.uid as string;
      // The API server injected the token volume: the pod is an ordinary API pod.
      const access = pod.spec.volumes.find((v: Json) => v.name.startsWith("kube-api-access-"));
      assert(access?.projected, "kube-api-access-* volume injected");

      const containerID = async (podUID: string) => {
        const cs = await runtime!.listContainers({
          labelSelector: { "io.kubernetes.pod.uid": podUID, "io.kubernetes.container.name": "app" },
        });
        const running = cs.find((c) => c.state === "CONTAINER_RUNNING");
        assert(running, "the app container runs");
        return running.id;
      };
      const id = await containerID(uid);
      const exec = async (cmd: string[]) =>
        new TextDecoder().decode((await runtime!.execSync(id, cmd, { timeoutMs: 10_000 })).stdout);

      await t.step("the container reads the configMap, secret and downward API files", async () => {
        assertEquals(await exec(["cat", "/etc/config/app.conf"]), "greeting=hello");
        assertEquals(await exec(["cat", "/etc/secret/db/password"]), "s3cr3t");
        assertEquals(await exec(["stat", "-L", "-c", "%a", "/etc/secret/db/password"]), "400\n");
        assertEquals(await exec(["cat", "/etc/podinfo/name"]), pod.metadata.name);
        assert((await exec(["cat", "/etc/podinfo/labels"])).includes('app="vols"'));
        // What the container really got: tmpfs for the secret and the memory emptyDir, read-only
        // where asked.
        const mounts = await exec(["cat", "/proc/self/mountinfo"]);
        const line = (p: string) => mounts.split("\n").find((l) => l.split(" ")[4] === p) ?? "";
        assert(/ ro,.* - tmpfs /.test(line("/etc/secret")), line("/etc/secret"));
        assert(/ - tmpfs .*size=16384k/.test(line("/cache")), line("/cache"));
        assert(/ rw,/.test(line("/etc/config")), line("/etc/config"));
        // subPathExpr: /sub is data/web inside the cache volume.
        await exec(["sh", "-c", "echo here > /sub/f"]);
        assertEquals(await exec(["cat", "/cache/data/web/f"]), "here\n");
        // hostPath DirectoryOrCreate made the folder 0755; HostToContainer: a mount made on the
        // host after the container started shows inside it.
        assertEquals((await Deno.stat(join(dir, "made/here"))).mode! & 0o777, 0o755);
        await exec(["touch", "/made/f"]);
        await Deno.stat(join(dir, "made/here/f"));
        const shared = join(dir, "shared");
        await Deno.mkdir(join(shared, "later"));
        await run("mount", ["-t", "tmpfs", "tmpfs", join(shared, "later")]);
        try {
          await Deno.writeTextFile(join(shared, "later", "f"), "propagated");
          assertEquals(await exec(["cat", "/host/later/f"]), "propagated");
        } finally {
          await run("umount", [join(shared, "later")]);
        }
      });

      await t.step(
        "the token: audience, expiry, bound to the pod, and it authenticates",
        async () => {
          const dirPath = "/var/run/secrets/kubernetes.io/serviceaccount";
          const token = await exec(["cat", `${dirPath}/token`]);
          assertEquals(await exec(["cat", `${dirPath}/namespace`]), ns);
          assert((await exec(["cat", `${dirPath}/ca.crt`])).includes("BEGIN CERTIFICATE"));
          const claims = JSON.parse(b64url(token.split(".")[1]));
          // Only the token authenticates (no client certificate), on loopback.
          const server = await k([
            "config",
            "view",
            "--minify",
            "-o",
            "jsonpath={.clusters[0].cluster.server}",
          ]);
          assertEquals(claims.aud, ["https://kubernetes.default.svc"]);
          assertEquals(claims.sub, `system:serviceaccount:${ns}:default`);
          assertEquals(claims["kubernetes.io"].pod, { name: pod.metadata.name, uid });
          assertEquals(claims["kubernetes.io"].node.name, real.nodeName);
          assert(claims.exp > Date.now() / 1000 && claims.exp > claims.iat, "unexpired");
          // The API server extends the injected 3607 s token; warnafter keeps the asked lifetime.
          assertEquals(claims["kubernetes.io"].warnafter - claims.iat, 3607);
          const review = JSON.parse(
            await run("kubectl", [
              "--kubeconfig=/dev/null",
              `--server=${server}`,
              "--insecure-skip-tls-verify",
              "auth",
              "whoami",
              "--token",
              token,
              "-o",
              "json",
            ]),
          );
          assertEquals(review.status.userInfo.username, `system:serviceaccount:${ns}:default`);
          assertEquals(review.status.userInfo.extra["authentication.kubernetes.io/pod-uid"], [uid]);
        },
      );

      await t.step("a config map update reaches the file through ..data", async () => {
        const before = await exec(["readlink", "/etc/config/..data"]);
        await k([
          "-n",
          ns,
          "patch",
          "configmap",
          "app-config",
          "-p",
          '{"data":{"app.conf":"greeting=updated"}}',
        ]);
        await waitFor(
          "the updated file",
          async () => (await exec(["cat", "/etc/config/app.conf"])) === "greeting=updated",
          { timeoutMs: 30_000 },
        );
        assert((await exec(["readlink", "/etc/config/..data"])) !== before, "..data swapped");
      });

      await t.step(
        "a missing config map: FailedMount, the pod waits in ContainerCreating",
        async () => {
          await k(
            ["apply", "-f", "-"],
            JSON.stringify({
              apiVersion: "v1",
              kind: "Pod",
              metadata: { name: "missing", namespace: ns },
              spec: podTemplate("missing", [{ name: "cfg", configMap: { name: "nope" } }], [{
                name: "cfg",
                mountPath: "/c",
              }]).spec,
            }),
          );
          const event = await waitFor("a FailedMount event", async () => {
            const events = await kj([
              "-n",
              ns,
              "get",
              "events",
              "--field-selector",
              "involvedObject.name=missing",
            ]);
            return events.items.find((e: Json) => e.reason === "FailedMount");
          }, { timeoutMs: 30_000 });
          assertEquals(
            event.message,
            'MountVolume.SetUp failed for volume "cfg" : configmaps "nope" not found',
          );
          const p = await kj(["-n", ns, "get", "pod", "missing"]);
          assertEquals(p.status.phase, "Pending");
          assertEquals(
            p.status.containerStatuses?.[0]?.state?.waiting?.reason,
            "ContainerCreating",
          );
        },
      );

      await t.step("a finished pod's volumes are unmounted while the pod stays", async () => {
        const spec = podTemplate("done", [{ name: "sec", secret: { secretName: "app-secret" } }], [{
          name: "sec",
          mountPath: "/s",
        }]).spec as Json;
        spec.restartPolicy = "Never";
        spec.containers[0].command = ["cat", "/s/password"];
        await k(
          ["apply", "-f", "-"],
          JSON.stringify({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "done", namespace: ns },
            spec,
          }),
        );
        const done = await waitFor("the pod Succeeded", async () => {
          const p = await kj(["-n", ns, "get", "pod", "done"]);
          return p.status?.phase === "Succeeded" && p;
        }, { timeoutMs: 30_000 });
        assertEquals(done.status.containerStatuses[0].state.terminated.exitCode, 0);
        await waitFor("its volumes unmounted and removed", async () => {
          const mounts = await listMountPoints();
          try {
            await Deno.stat(join(podsDir, done.metadata.uid));
            return false;
          } catch {
            return !mounts.some((m) => m.startsWith(join(podsDir, done.metadata.uid) + "/"));
          }
        }, { timeoutMs: 30_000 });
      });

      await t.step(
        "an agent restart keeps running volumes and cleans a pod deleted meanwhile",
        async () => {
          const missingUID = (await kj(["-n", ns, "get", "pod", "missing"])).metadata.uid as string;
          await Deno.stat(join(podsDir, missingUID, "volumes")); // set up, except the config map
          await agent!.stop();
          agent = undefined;
          await k(["-n", ns, "delete", "pod", "missing", "--grace-period=0", "--force"]);
          agent = await startAgent();
          await waitFor("the orphan's folder removed", async () => {
            try {
              await Deno.stat(join(podsDir, missingUID));
              return false;
            } catch {
              return true;
            }
          }, { timeoutMs: 30_000 });
          assertEquals(await exec(["cat", "/etc/secret/db/password"]), "s3cr3t");
          assert((await listMountPoints()).some((m) => m.startsWith(join(podsDir, uid) + "/")));
        },
      );

      await t.step("deleting the Deployment unmounts and removes the pod's volumes", async () => {
        await k(["-n", ns, "delete", "deployment", "vols", "--wait=false"]);
        await waitFor("the pod's folder removed and nothing mounted under it", async () => {
          const mounts = (await listMountPoints()).filter((m) => m.startsWith(podsDir + "/"));
          try {
            await Deno.stat(join(podsDir, uid));
            return false;
          } catch {
            return mounts.length === 0;
          }
        }, { timeoutMs: 60_000 });
      });
    } finally {
      await agent?.stop().catch(() => {});
      // Pods keep running when the agent stops (kubelet's way); a failed run's are removed here.
      for (
        const sb of await runtime?.listPodSandbox({
          labelSelector: { "io.kubernetes.pod.namespace": ns },
        }) ?? []
      ) {
        await runtime!.stopPodSandbox(sb.id).catch(() => {});
        await runtime!.removePodSandbox(sb.id).catch(() => {});
      }
      await k(["delete", "namespace", ns, "--wait=false"]).catch(() => {});
      // Whatever is left (a failed run) goes with its pods: containers stopped by a fresh agent
      // that stops pods on exit would need the API; remove mounts and folders directly.
      for (const m of (await listMountPoints()).filter((m) => m.startsWith(dir + "/")).reverse()) {
        await new Deno.Command("umount", { args: [m] }).output();
      }
      runtime?.close();
      if (quiet) log.setLogSink(quiet);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
