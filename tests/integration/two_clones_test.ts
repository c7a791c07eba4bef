/**
 * Two clones' private containerds side by side: `scripts/containerd.sh up` in two state folders
 * gives each its own CNI bridge, network name and subnet, a pod in each gets an address in its own
 * subnet, and `down` of the first leaves the second's bridge, CNI results and pod reachable.
 * Probelet's own script; nothing upstream mirrors it. Needs root and containerd (as the other
 * integration tests); it starts its two containerds under `.run/two-clones/` and stops them.
 */
import assert from "node:assert/strict";
import { newRemoteRuntimeService } from "../../src/cri_client/mod.ts";
import type { RuntimeService } from "../../src/cri_client/mod.ts";
import { eventually, integrationTest, repoRoot, startTestSandbox } from "./helpers.ts";
import type { TestSandbox } from "./helpers.ts";

/** Why the two-clone test cannot run here, or undefined. */
async function skipReason(): Promise<string | undefined> {
  if (Deno.uid() !== 0) return `not root (uid ${Deno.uid()}); containerd needs root`;
  const found = await new Deno.Command("bash", {
    args: ["-c", "command -v containerd && command -v ip"],
    stdout: "null",
    stderr: "null",
  }).output();
  if (!found.success) {
    return "containerd or ip not installed (bash scripts/containerd.sh up installs them)";
  }
  return undefined;
}

/** Runs `scripts/containerd.sh <command>` for the clone whose state folder is `dir`. */
async function containerdSh(dir: string, command: string): Promise<string> {
  const out = await new Deno.Command("bash", {
    args: [`${repoRoot}/scripts/containerd.sh`, command],
    env: { PROBELET_CONTAINERD_DIR: dir },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`containerd.sh ${command} (${dir}) exit ${out.code}:\n${text}`);
  return text;
}

/** The CNI network a clone's containerd uses, as its conflist says. */
interface CloneNetwork {
  name: string;
  bridge: string;
  subnet: string;
}

async function cloneNetwork(dir: string): Promise<CloneNetwork> {
  const conf = JSON.parse(await Deno.readTextFile(`${dir}/cni/net.d/10-probelet.conflist`));
  const bridge = conf.plugins[0];
  return { name: conf.name, bridge: bridge.bridge, subnet: bridge.ipam.ranges[0][0].subnet };
}

async function linkExists(name: string): Promise<boolean> {
  const out = await new Deno.Command("ip", {
    args: ["link", "show", name],
    stdout: "null",
    stderr: "null",
  })
    .output();
  return out.success;
}

/** The body of the busybox httpd at `ip:8080`. */
async function httpGet(ip: string): Promise<string> {
  const res = await fetch(`http://${ip}:8080/`, { signal: AbortSignal.timeout(2_000) });
  return await res.text();
}

/** `a.b.c.` of an `a.b.c.0/24` subnet. */
function prefixOf(subnet: string): string {
  return subnet.replace(/0\/24$/, "");
}

integrationTest(
  "two clones: own bridge, network and subnet each; down of one leaves the other's pod reachable",
  await skipReason(),
  async (t) => {
    const top = `${repoRoot}/.run/two-clones`;
    const dirs = { a: `${top}/a`, b: `${top}/b` };
    let runtimeB: RuntimeService | undefined;
    let podB: TestSandbox | undefined;
    const up = { a: false, b: false };
    try {
      await containerdSh(dirs.a, "up");
      up.a = true;
      await containerdSh(dirs.b, "up");
      up.b = true;
      const netA = await cloneNetwork(dirs.a);
      const netB = await cloneNetwork(dirs.b);

      await t.step("bridges, CNI networks and subnets differ", () => {
        assert.notEqual(netA.bridge, netB.bridge, "bridge");
        assert.notEqual(netA.name, netB.name, "CNI network name");
        assert.notEqual(netA.subnet, netB.subnet, "subnet");
        assert.ok(netA.bridge.length <= 15 && netB.bridge.length <= 15, "interface names fit");
      });

      const runtimeA = await newRemoteRuntimeService(`unix://${dirs.a}/containerd.sock`);
      runtimeB = await newRemoteRuntimeService(`unix://${dirs.b}/containerd.sock`);
      let podA: TestSandbox | undefined;
      try {
        podA = await startTestSandbox(runtimeA, "clone-a");
        podB = await startTestSandbox(runtimeB, "clone-b");
        const httpd = ["httpd", "-f", "-p", "8080", "-h", "/var/www"];
        await podA.startContainer("web", { command: httpd });
        await podB.startContainer("web", { command: httpd });

        await t.step("each pod has an address in its clone's subnet and answers", async () => {
          assert.ok(podA!.ip.startsWith(prefixOf(netA.subnet)), `a's pod IP ${podA!.ip}`);
          assert.ok(podB!.ip.startsWith(prefixOf(netB.subnet)), `b's pod IP ${podB!.ip}`);
          assert.equal(await eventually("a's httpd", () => httpGet(podA!.ip)), "probelet ok\n");
          assert.equal(await eventually("b's httpd", () => httpGet(podB!.ip)), "probelet ok\n");
        });
      } finally {
        await podA?.remove();
        runtimeA.close();
      }

      await containerdSh(dirs.a, "down");
      up.a = false;

      await t.step("down of a removed a's bridge and left b's", async () => {
        assert.equal(await linkExists(netA.bridge), false, `${netA.bridge} still there`);
        assert.equal(await linkExists(netB.bridge), true, `${netB.bridge} gone`);
        const results = [...Deno.readDirSync("/var/lib/cni/results")].map((e) => e.name);
        assert.ok(
          results.some((n) => n.startsWith(`${netB.name}-`)),
          `b's CNI results: ${results}`,
        );
      });

      await t.step("b's pod still answers on its IP", async () => {
        assert.equal(await httpGet(podB!.ip), "probelet ok\n");
      });
    } finally {
      await podB?.remove();
      runtimeB?.close();
      if (up.a) await containerdSh(dirs.a, "down").catch((e) => console.error(e));
      if (up.b) await containerdSh(dirs.b, "down").catch((e) => console.error(e));
    }
  },
);
