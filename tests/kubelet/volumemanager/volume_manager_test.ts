/**
 * The volume manager on a real folder (root: tmpfs mounts are real): kubelet's
 * volume_manager_test.go TestGetMountedVolumesForPodAndGetVolumesInUse and friends, plus the
 * layout `<pods>/<uid>/volumes/kubernetes.io~<plugin>/<name>`, FailedMount events, content
 * updates through `..data`, teardown, kubelet_volumes_test.go's cleanupOrphanedPodDirs, and
 * kubelet_pods_test.go's TestMakeMounts.
 */
import { deepStrictEqual as assertEquals, ok, rejects } from "node:assert/strict";
import { join } from "node:path";
import type { ConfigMap, Pod, Secret, TokenRequest } from "../../../src/api/core/v1/mod.ts";
import { StatusError } from "../../../src/client/errors.ts";
import { FakeRecorder } from "../../../src/kubelet/events/mod.ts";
import { cleanupOrphanedPodDirs } from "../../../src/kubelet/kubelet_volumes.ts";
import { makeMounts } from "../../../src/kubelet/kubelet_pods_mounts.ts";
import { VolumeManager } from "../../../src/kubelet/volumemanager/volume_manager.ts";
import { listMountPoints, type VolumeHost } from "../../../src/volume/volume.ts";

const isRoot = Deno.uid() === 0;
const notFound = (what: string, name: string) =>
  new StatusError({
    kind: "Status",
    status: "Failure",
    reason: "NotFound",
    code: 404,
    message: `${what} "${name}" not found`,
  });

function fakeHost(podsDir: string) {
  const configMaps = new Map<string, ConfigMap>();
  const secrets = new Map<string, Secret>();
  const tokens: TokenRequest[] = [];
  const host: VolumeHost = {
    podsDir,
    getConfigMap: (ns, name) => {
      const cm = configMaps.get(`${ns}/${name}`);
      return cm ? Promise.resolve(cm) : Promise.reject(notFound("configmaps", name));
    },
    getSecret: (ns, name) => {
      const s = secrets.get(`${ns}/${name}`);
      return s ? Promise.resolve(s) : Promise.reject(notFound("secrets", name));
    },
    getServiceAccountToken: (_ns, _name, tr) => {
      tokens.push(tr);
      return Promise.resolve({
        ...tr,
        status: { token: `token-for-${tr.spec.boundObjectRef?.uid}`, expirationTimestamp: "" },
      });
    },
    getNodeAllocatable: () => ({ cpu: "2", memory: "4Gi" }),
  };
  return { host, configMaps, secrets, tokens };
}

function testPod(uid: string, volumes: Pod["spec"]["volumes"]): Pod {
  return {
    metadata: { name: "web", namespace: "ns", uid },
    spec: { containers: [{ name: "app", image: "busybox" }], volumes },
  };
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "volume_manager_test" });
  try {
    await fn(dir);
  } finally {
    for (const m of (await listMountPoints()).filter((m) => m.startsWith(dir + "/"))) {
      await new Deno.Command("umount", { args: [m] }).output();
    }
    await Deno.remove(dir, { recursive: true });
  }
}

async function fsType(path: string): Promise<string | undefined> {
  const line = (await Deno.readTextFile("/proc/self/mountinfo")).split("\n").find((l) =>
    l.split(" ")[4] === path
  );
  return line?.split(" - ")[1].split(" ")[0];
}

const read = (p: string) => Deno.readTextFile(p);

Deno.test({
  name: "TestWaitForAttachAndMount",
  ignore: !isRoot,
  fn: () =>
    withDir(async (dir) => {
      const { host, configMaps, secrets, tokens } = fakeHost(join(dir, "pods"));
      configMaps.set("ns/cfg", { metadata: {}, data: { "app.conf": "a=1" } });
      configMaps.set("ns/kube-root-ca.crt", { metadata: {}, data: { "ca.crt": "CA" } });
      secrets.set("ns/creds", { metadata: {}, data: { password: btoa("hunter2") } });
      const recorder = new FakeRecorder();
      const vm = new VolumeManager({ host, recorder });
      const pod = testPod("uid-1", [
        { name: "cfg", configMap: { name: "cfg" } },
        { name: "creds", secret: { secretName: "creds", defaultMode: 0o400 } },
        { name: "scratch", emptyDir: {} },
        { name: "shm", emptyDir: { medium: "Memory", sizeLimit: "8Mi" } },
        { name: "host", hostPath: { path: dir, type: "Directory" } },
        {
          name: "kube-api-access-abcde",
          projected: {
            defaultMode: 420,
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: "token", audience: "api" } },
              {
                configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] },
              },
              {
                downwardAPI: {
                  items: [{ path: "namespace", fieldRef: { fieldPath: "metadata.namespace" } }],
                },
              },
            ],
          },
        },
      ]);
      await vm.waitForAttachAndMount(pod);
      const volumes = join(dir, "pods/uid-1/volumes");
      const mounted = vm.getMountedVolumesForPod("uid-1");
      assertEquals(mounted.get("cfg")?.path, join(volumes, "kubernetes.io~configmap/cfg"));
      assertEquals(mounted.get("host")?.path, dir);
      assertEquals(await read(join(volumes, "kubernetes.io~configmap/cfg/app.conf")), "a=1");
      assertEquals(await read(join(volumes, "kubernetes.io~secret/creds/password")), "hunter2");
      assertEquals(
        (await Deno.stat(join(volumes, "kubernetes.io~secret/creds/password"))).mode! & 0o777,
        0o400,
      );
      // Secrets and projected tokens live on a tmpfs; a disk emptyDir does not.
      assertEquals(await fsType(join(volumes, "kubernetes.io~secret/creds")), "tmpfs");
      assertEquals(
        await fsType(join(volumes, "kubernetes.io~projected/kube-api-access-abcde")),
        "tmpfs",
      );
      assertEquals(await fsType(join(volumes, "kubernetes.io~empty-dir/scratch")), undefined);
      assertEquals(
        (await Deno.stat(join(volumes, "kubernetes.io~empty-dir/scratch"))).mode! & 0o777,
        0o777,
      );
      const shm = join(volumes, "kubernetes.io~empty-dir/shm");
      assertEquals(await fsType(shm), "tmpfs");
      const mountinfo = await Deno.readTextFile("/proc/self/mountinfo");
      ok(mountinfo.split("\n").some((l) => l.split(" ")[4] === shm && l.includes("size=8192k")));
      const projected = join(volumes, "kubernetes.io~projected/kube-api-access-abcde");
      assertEquals(await read(join(projected, "token")), "token-for-uid-1");
      assertEquals(await read(join(projected, "ca.crt")), "CA");
      assertEquals(await read(join(projected, "namespace")), "ns");
      assertEquals(tokens[0].spec, {
        audiences: ["api"],
        expirationSeconds: 3607,
        boundObjectRef: { apiVersion: "v1", kind: "Pod", name: "web", uid: "uid-1" },
      });
      assertEquals(recorder.events, []);

      // An update reaches the file through a new ..data at the next sync.
      const cfgDir = join(volumes, "kubernetes.io~configmap/cfg");
      const before = await Deno.readLink(join(cfgDir, "..data"));
      configMaps.set("ns/cfg", { metadata: {}, data: { "app.conf": "a=2" } });
      await vm.waitForAttachAndMount(pod);
      assertEquals(await read(join(cfgDir, "app.conf")), "a=2");
      ok((await Deno.readLink(join(cfgDir, "..data"))) !== before);

      // A remount that fails (the config map deleted) is reported but does not hold the pod
      // back: the volume keeps its last content.
      configMaps.delete("ns/cfg");
      await vm.waitForAttachAndMount(pod);
      assertEquals(recorder.events, [
        'Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmaps "cfg" not found',
      ]);
      assertEquals(await read(join(cfgDir, "app.conf")), "a=2");

      // Removal: tmpfs unmounted, the pod's folder gone.
      await vm.unmountPodVolumes("uid-1");
      assertEquals((await listMountPoints()).filter((m) => m.startsWith(dir + "/")), []);
      await rejects(Deno.stat(join(dir, "pods/uid-1")), Deno.errors.NotFound);
      assertEquals(vm.getMountedVolumesForPod("uid-1").size, 0);
    }),
});

Deno.test({
  name: "TestWaitForAttachAndMount FailedMount",
  ignore: !isRoot,
  fn: () =>
    withDir(async (dir) => {
      const { host, configMaps } = fakeHost(join(dir, "pods"));
      const recorder = new FakeRecorder();
      const vm = new VolumeManager({ host, recorder });
      const pod = testPod("uid-2", [
        { name: "cfg", configMap: { name: "missing" } },
        { name: "opt", configMap: { name: "missing", optional: true } },
        { name: "keys", configMap: { name: "present", items: [{ key: "nope", path: "x" }] } },
      ]);
      configMaps.set("ns/present", { metadata: {}, data: { a: "1" } });
      await rejects(vm.waitForAttachAndMount(pod), {
        message:
          'unmounted volumes=[cfg keys], unattached volumes=[], failed to process volumes=[]: configmaps "missing" not found',
      });
      assertEquals(recorder.events, [
        'Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmaps "missing" not found',
        'Warning FailedMount MountVolume.SetUp failed for volume "keys" : configmap references non-existent config key: nope',
      ]);
      // The optional one is set up, empty.
      assertEquals(vm.getMountedVolumesForPod("uid-2").has("opt"), true);
      await vm.unmountPodVolumes("uid-2");
    }),
});

Deno.test({
  name: "TestCleanupOrphanedPodDirs",
  ignore: !isRoot,
  fn: () =>
    withDir(async (dir) => {
      const pods = join(dir, "pods");
      const { host, secrets } = fakeHost(pods);
      secrets.set("ns/s", { metadata: {}, data: { k: btoa("v") } });
      // A previous agent set these up, then went away.
      const old = new VolumeManager({ host, recorder: new FakeRecorder() });
      await old.waitForAttachAndMount(
        testPod("gone", [{ name: "s", secret: { secretName: "s" } }]),
      );
      await old.waitForAttachAndMount(
        testPod("kept", [{ name: "s", secret: { secretName: "s" } }]),
      );
      await Deno.mkdir(join(pods, "ns_web_gone"), { recursive: true }); // a pod log folder
      const removed = await cleanupOrphanedPodDirs(pods, new Set(["kept"]));
      assertEquals(removed, ["gone"]);
      const left = [...Deno.readDirSync(pods)].map((e) => e.name).sort();
      assertEquals(left, ["kept", "ns_web_gone"]);
      const mounts = (await listMountPoints()).filter((m) => m.startsWith(dir + "/"));
      assertEquals(mounts, [join(pods, "kept/volumes/kubernetes.io~secret/s")]);
    }),
});

Deno.test("TestMakeMounts", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "make_mounts_test" });
  try {
    const vol = join(dir, "vol");
    await Deno.mkdir(vol);
    await Deno.symlink("/etc", join(vol, "escape"));
    const volumes = new Map([["v", { path: vol, pluginName: "kubernetes.io/empty-dir" }]]);
    const pod = testPod("u", []);
    await t.step("readOnly, subPath and propagation", async () => {
      const mounts = await makeMounts(pod, {
        name: "app",
        volumeMounts: [
          { name: "v", mountPath: "/data", readOnly: true },
          { name: "v", mountPath: "/sub", subPath: "a/b", mountPropagation: "HostToContainer" },
        ],
      }, volumes);
      assertEquals(mounts, [
        {
          containerPath: "/data",
          hostPath: vol,
          readonly: true,
          selinuxRelabel: false,
          propagation: "PROPAGATION_PRIVATE",
        },
        {
          containerPath: "/sub",
          hostPath: join(await Deno.realPath(vol), "a/b"),
          readonly: false,
          selinuxRelabel: false,
          propagation: "PROPAGATION_HOST_TO_CONTAINER",
        },
      ]);
      ok((await Deno.stat(join(vol, "a/b"))).isDirectory, "the subPath was created");
    });
    await t.step("subPathExpr expanded from the container's env", async () => {
      const mounts = await makeMounts(pod, {
        name: "app",
        env: [{ name: "POD", value: "web-1" }],
        volumeMounts: [{ name: "v", mountPath: "/logs", subPathExpr: "logs/$(POD)" }],
      }, volumes);
      assertEquals(mounts[0].hostPath, join(await Deno.realPath(vol), "logs/web-1"));
      await rejects(
        makeMounts(pod, {
          name: "app",
          env: [{ name: "EMPTY", value: "" }],
          volumeMounts: [{ name: "v", mountPath: "/x", subPathExpr: "$(NOPE)/$(EMPTY)" }],
        }, volumes),
        { message: "missing value for EMPTY, NOPE" },
      );
    });
    const failing: [string, Record<string, unknown>, string][] = [
      [
        "a volume that is not set up",
        { name: "w", mountPath: "/w" },
        'cannot find volume "w" to mount into container "app"',
      ],
      ["a subPath through a symlink out of the volume", {
        name: "v",
        mountPath: "/x",
        subPath: "escape",
      }, `subpath "${vol}/escape" not within volume path "${vol}"`],
      [
        "a subPath with ..",
        { name: "v", mountPath: "/x", subPath: "a/../../etc" },
        "unable to provision SubPath `a/../../etc`: must not contain '..'",
      ],
      ["Bidirectional unprivileged", {
        name: "v",
        mountPath: "/x",
        mountPropagation: "Bidirectional",
      }, "Bidirectional mount propagation is available only to privileged containers"],
    ];
    for (const [name, mount, message] of failing) {
      await t.step(name, () =>
        rejects(
          makeMounts(pod, { name: "app", volumeMounts: [mount as never] }, volumes),
          { message },
        ));
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
