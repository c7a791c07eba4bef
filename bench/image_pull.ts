/**
 * What a pull costs on the project's containerd with the test registry up
 * (`bash scripts/containerd.sh up && bash scripts/registry.sh up`), printed as figures:
 * `deno run -A bench/image_pull.ts [rounds]`.
 *
 * - `pull`: CRI `PullImage` of `<registry>/probelet/busybox:1` (TLS, htpasswd credentials, 2 MiB
 *   layer) after removing the local reference, so each round resolves, authenticates and unpacks
 *   (the blobs stay in containerd's content store, as on a node re-pulling a known image);
 * - `present`: the image manager's `IfNotPresent` path for a present image (one `ImageStatus`);
 * - `keyring`: building the keyring of one dockerconfigjson secret and looking the image up.
 * @module
 */
import { newRemoteImageService } from "../src/cri_client/mod.ts";
import { BasicDockerKeyring, makeDockerKeyring } from "../src/credentialprovider/keyring.ts";
import { FakeRecorder } from "../src/kubelet/events/mod.ts";
import { newImageManager } from "../src/kubelet/images/image_manager.ts";
import { newKubeImageService } from "../src/kubelet/kuberuntime/kuberuntime_image.ts";
import { RealClock } from "../src/util/clock.ts";
import { Backoff } from "../src/util/flowcontrol/backoff.ts";

const repo = new URL("../", import.meta.url).pathname.replace(/\/$/, "");
const rounds = Number(Deno.args[0] ?? 10);
const sock = `${repo}/.run/containerd/containerd.sock`;

async function sh(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

function stats(name: string, ms: number[]): void {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))].toFixed(2);
  console.log(`${name}: n=${s.length} median=${at(0.5)}ms p90=${at(0.9)}ms max=${at(1)}ms`);
}

const env = Object.fromEntries(
  (await sh("bash", [`${repo}/scripts/registry.sh`, "env"])).trim().split("\n")
    .map((l) => l.split("=", 2) as [string, string]),
);
const image = `${env.PROBELET_REGISTRY}/probelet/busybox:1`;
const auth = { username: env.PROBELET_REGISTRY_USER, password: env.PROBELET_REGISTRY_PASSWORD };
const images = await newRemoteImageService(`unix://${sock}`);
const removeAll = async () => {
  const refs = (await sh("ctr", ["-a", sock, "-n", "k8s.io", "images", "ls", "-q"])).split("\n")
    .filter((n) => n.startsWith(`${env.PROBELET_REGISTRY}/`));
  if (refs.length > 0) await sh("ctr", ["-a", sock, "-n", "k8s.io", "images", "rm", ...refs]);
};
try {
  const pulls: number[] = [];
  for (let i = 0; i < rounds; i++) {
    await removeAll();
    const start = performance.now();
    await images.pullImage({ image }, { auth });
    pulls.push(performance.now() - start);
  }
  stats("pull", pulls);

  const clock = new RealClock();
  const manager = newImageManager({
    recorder: new FakeRecorder(),
    imageService: newKubeImageService(images),
    backOff: new Backoff(clock, { initialMs: 10_000, maxMs: 300_000 }),
    clock,
  });
  const pod = { metadata: { name: "p", namespace: "default", uid: "u" }, spec: { containers: [] } };
  const present: number[] = [];
  for (let i = 0; i < rounds * 10; i++) {
    const start = performance.now();
    const r = await manager.ensureImageExists(pod, {
      objRef: {},
      requestedImage: "probelet.local/busybox:1",
      pullSecrets: [],
      pullPolicy: "IfNotPresent",
    });
    present.push(performance.now() - start);
    if (r.error) throw new Error(r.message);
  }
  stats("present", present);

  const secret = {
    metadata: { name: "regcred", namespace: "default", uid: "x" },
    type: "kubernetes.io/dockerconfigjson",
    data: {
      ".dockerconfigjson": btoa(JSON.stringify({
        auths: { [env.PROBELET_REGISTRY]: { auth: btoa(`${auth.username}:${auth.password}`) } },
      })),
    },
  };
  const n = 10_000;
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    makeDockerKeyring([secret], new BasicDockerKeyring()).lookup(
      `${env.PROBELET_REGISTRY}/probelet/busybox`,
    );
  }
  console.log(
    `keyring: ${((performance.now() - start) * 1000 / n).toFixed(1)}µs per secret+lookup`,
  );
} finally {
  await removeAll();
  images.close();
}
