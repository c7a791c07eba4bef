/**
 * The pods of the soak scripts (`soak.ts`, `heap_soak.ts`): the fixture pods with their ports
 * moved, and on the embedded runtime a container printing without end (`yes`) and a gRPC target
 * that accepts TCP and never speaks HTTP/2, probed for readiness and liveness every second.
 * @module
 */
import { join } from "node:path";

const repo = new URL("..", import.meta.url).pathname;

/**
 * Copies `fixtures/pods/<runtime>` into `dir`, moving the fixture ports 18180-18183 to
 * `portBase`..`portBase + 3` so that a `deno task start` elsewhere on the machine does not collide.
 */
export async function copyFixturePods(
  dir: string,
  options: { runtime: "host" | "containerd"; portBase: number },
): Promise<void> {
  const fixtures = join(repo, "fixtures/pods", options.runtime);
  for await (const entry of Deno.readDir(fixtures)) {
    const text = await Deno.readTextFile(join(fixtures, entry.name));
    await Deno.writeTextFile(
      join(dir, entry.name),
      text.replaceAll(/\b1818([0-3])\b/g, (_, d) => String(options.portBase + Number(d))),
    );
  }
}

/** Writes the embedded runtime's extra pods into `dir`: `flood` and `grpc-silent` on `silentPort`. */
export async function writeEmbeddedSoakPods(dir: string, silentPort: number): Promise<void> {
  await Deno.writeTextFile(
    join(dir, "flood.yaml"),
    `apiVersion: v1
kind: Pod
metadata:
  name: flood
spec:
  containers:
  - name: flood
    image: probelet.local/host
    command: ["yes"]
`,
  );
  const silent = `const l = Deno.listen({ hostname: '127.0.0.1', port: ${silentPort} }); ` +
    "for await (const c of l) c.readable.pipeTo(new WritableStream()).catch(() => {});";
  await Deno.writeTextFile(
    join(dir, "grpc-silent.yaml"),
    `apiVersion: v1
kind: Pod
metadata:
  name: grpc-silent
spec:
  containers:
  - name: target
    image: probelet.local/host
    command: ["deno", "eval", ${JSON.stringify(silent)}]
    readinessProbe:
      grpc: {port: ${silentPort}}
      periodSeconds: 1
      timeoutSeconds: 1
    livenessProbe:
      grpc: {port: ${silentPort}}
      periodSeconds: 1
      timeoutSeconds: 1
      failureThreshold: 1000000
`,
  );
}
