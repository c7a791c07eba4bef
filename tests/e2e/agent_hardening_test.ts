/**
 * The agent as a subprocess against the faults of issue 10 that only show in a whole process:
 * descriptor exhaustion on its port, a second agent on the same state folder, a named pipe in the
 * manifest folder, and a stop (SIGTERM, then a second signal) with pods that do not want to end.
 * Every process a test starts is found by a marker in its command line and killed by pid.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { killRecordedGroups } from "../../src/runtime/embedded/mod.ts";
import { waitFor } from "./helpers.ts";

const mainPath = new URL("../../src/cmd/probelet/main.ts", import.meta.url).pathname;

async function processesMentioning(text: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
      if (cmdline.includes(text) && !cmdline.includes("deno")) pids.push(Number(entry.name));
    } catch {
      // Exited meanwhile.
    }
  }
  return pids;
}

interface Agent {
  child: Deno.ChildProcess;
  port: number;
  stderr: Promise<string>;
  exited: () => boolean;
}

/** Starts the CLI (optionally under `ulimit -n`), on a port below the ephemeral range. */
function spawnAgent(
  base: string,
  options: { port: number; ulimit?: number; extra?: string[] },
): Agent {
  const args = [
    "run",
    "-A",
    mainPath,
    "--pod-manifest-path",
    join(base, "pods"),
    "--root-dir",
    join(base, "root"),
    "--read-only-port",
    String(options.port),
    "--port",
    "0",
    "--node-name",
    "hard",
    "--live-view",
    "never",
    ...(options.extra ?? []),
  ];
  const command = options.ulimit === undefined
    ? new Deno.Command(Deno.execPath(), { args, stdout: "null", stderr: "piped" })
    : new Deno.Command("sh", {
      args: ["-c", `ulimit -n ${options.ulimit} && exec "$0" "$@"`, Deno.execPath(), ...args],
      stdout: "null",
      stderr: "piped",
    });
  const child = command.spawn();
  let done = false;
  child.status.then(() => done = true);
  return {
    child,
    port: options.port,
    stderr: new Response(child.stderr).text(),
    exited: () => done,
  };
}

function randomPort(): number {
  return 20_000 + Math.floor(Math.random() * 10_000);
}

// deno-lint-ignore no-explicit-any
async function getJSON(port: number, path: string): Promise<any> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return await res.json();
}

async function healthz(port: number): Promise<string | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, {
      signal: AbortSignal.timeout(2_000),
    });
    return await res.text();
  } catch {
    return undefined;
  }
}

/** Waits until the agent's pod `name` has its container running; the pod list. */
async function waitRunning(agent: Agent, name: string) {
  return await waitFor(`${name} running`, async () => {
    if (agent.exited()) throw new Error(`the agent exited:\n${await agent.stderr}`);
    try {
      const list = await getJSON(agent.port, "/pods");
      const pod = list.items.find((p: { metadata: { name: string } }) =>
        p.metadata.name === `${name}-hard`
      );
      return pod?.status?.containerStatuses?.[0]?.state?.running ? list : undefined;
    } catch {
      return undefined;
    }
  }, { timeoutMs: 30_000 });
}

function pod(name: string, command: string, extra = ""): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 100000
  containers:
  - name: app
    image: busybox
    command: ["sh", "-c", ${JSON.stringify(command)}]
${extra}`;
}

/** Runs `fn` with a fresh folder; afterwards kills the agent and every process it may have left. */
async function withAgentDir(
  fn: (base: string, agents: Agent[], marker: string) => Promise<void>,
): Promise<void> {
  const base = await Deno.makeTempDir({ prefix: "probelet-hard-" });
  const marker = `probelet-hard-marker-${crypto.randomUUID()}`;
  await Deno.mkdir(join(base, "pods"));
  const agents: Agent[] = [];
  try {
    await fn(base, agents, marker);
  } finally {
    for (const a of agents) {
      try {
        a.child.kill("SIGKILL");
      } catch {
        // Already exited.
      }
      await a.child.status;
      await a.stderr.catch(() => "");
    }
    killRecordedGroups(join(base, "root", "embedded"));
    for (const pid of await processesMentioning(marker)) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // Gone.
      }
    }
    await Deno.remove(base, { recursive: true });
  }
}

Deno.test({
  name: "agent: running out of descriptors on --port does not end it; idle connections close",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: () =>
    withAgentDir(async (base, agents, marker) => {
      await Deno.writeTextFile(
        join(base, "pods", "sleeper.yaml"),
        pod("sleeper", `sleep 600 # ${marker}`),
      );
      const agent = spawnAgent(base, {
        port: randomPort(),
        ulimit: 256,
        extra: ["--http-idle-timeout", "2s"],
      });
      agents.push(agent);
      await waitRunning(agent, "sleeper");
      const containers = await processesMentioning(marker);
      assertEquals(containers.length, 1);
      // 300 idle connections against a limit of 256 descriptors.
      const conns: Deno.Conn[] = [];
      for (let i = 0; i < 300; i++) {
        try {
          conns.push(await Deno.connect({ hostname: "127.0.0.1", port: agent.port }));
        } catch {
          break; // the backlog is full
        }
      }
      assert(conns.length > 64, `only ${conns.length} connections`);
      // The server closes what it cannot keep (over its limit, the connections waiting longest
      // for a request head) and the rest at the 10 s request header timeout (the injected 2 s
      // idle timeout is for kept-alive connections); every connection ends without the test
      // closing it.
      const closedByServer = await Promise.all(conns.map(async (c) => {
        const n = await c.read(new Uint8Array(1)).catch(() => null);
        return n === null;
      }));
      assertEquals(closedByServer.filter((x) => !x).length, 0);
      for (const c of conns) c.close();
      if (agent.exited()) throw new Error(`the agent exited:\n${await agent.stderr}`);
      assertEquals(await waitFor("/healthz answering", () => healthz(agent.port)), "ok");
      assertEquals(await processesMentioning(marker), containers, "the container was not touched");
      agent.child.kill("SIGTERM");
      assertEquals((await agent.child.status).code, 0);
      const log = await agent.stderr;
      assert(!/Too many open files.*Uncaught|panicked/.test(log), log);
      assert(/connection limit reached/.test(log), log);
      assert(/maxConnections=64/.test(log), log);
    }),
});

Deno.test({
  name: "agent: a second agent on the same state folder exits and touches nothing",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: () =>
    withAgentDir(async (base, agents, marker) => {
      await Deno.writeTextFile(
        join(base, "pods", "sleeper.yaml"),
        pod("sleeper", `sleep 600 # ${marker}`),
      );
      const first = spawnAgent(base, { port: randomPort() });
      agents.push(first);
      await waitRunning(first, "sleeper");
      const containers = await processesMentioning(marker);
      assertEquals(containers.length, 1);
      // Same folder: another port, then the same port.
      for (const port of [randomPort(), first.port]) {
        const second = spawnAgent(base, { port });
        agents.push(second);
        const status = await second.child.status;
        const log = await second.stderr;
        assertEquals(status.code, 1, log);
        assert(
          log.includes(
            `another probelet (pid ${first.child.pid}) is using --root-dir ${join(base, "root")}`,
          ),
          log,
        );
        assert(!log.includes("leftover") && !log.includes("Killing"), log);
      }
      assertEquals(await processesMentioning(marker), containers, "the first agent's container");
      const list = await getJSON(first.port, "/pods");
      assertEquals(list.items[0].status.containerStatuses[0].restartCount, 0);
      first.child.kill("SIGTERM");
      assertEquals((await first.child.status).code, 0);
    }),
});

Deno.test({
  name: "agent: a named pipe in the manifest folder; new manifests noticed, SIGTERM prompt",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: () =>
    withAgentDir(async (base, agents, marker) => {
      await Deno.writeTextFile(join(base, "pods", "a.yaml"), pod("a", `sleep 600 # ${marker}`));
      // A long re-list period: only file notifications can bring b.yaml in within the test.
      const agent = spawnAgent(base, {
        port: randomPort(),
        extra: ["--file-check-frequency", "10m"],
      });
      agents.push(agent);
      await waitRunning(agent, "a");
      const made = await new Deno.Command("mkfifo", { args: [join(base, "pods", "p.yaml")] })
        .output();
      assert(made.success);
      await Deno.writeTextFile(join(base, "pods", "b.yaml"), pod("b", `sleep 601 # ${marker}`));
      await waitRunning(agent, "b");
      assertEquals(await healthz(agent.port), "ok");
      const started = Date.now();
      agent.child.kill("SIGTERM");
      const status = await agent.child.status;
      const log = await agent.stderr;
      assertEquals(status.code, 0, log);
      assert(Date.now() - started < 20_000, "the stop did not hang");
      assert(log.includes("not a regular file (named pipe); not read"), log);
      assertEquals(await processesMentioning(marker), []);
    }),
});

Deno.test({
  name: "agent: SIGTERM is capped by --shutdown-grace-period; a second signal leaves nothing",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    // The container ignores SIGTERM and its pod asks for 100000 s to end.
    const stubborn = (marker: string) => `trap '' TERM; sleep 600 # ${marker}`;

    await t.step("the cap ends the stop", () =>
      withAgentDir(async (base, agents, marker) => {
        await Deno.writeTextFile(join(base, "pods", "s.yaml"), pod("s", stubborn(marker)));
        const agent = spawnAgent(base, {
          port: randomPort(),
          extra: ["--shutdown-grace-period", "2s", "--v", "2"],
        });
        agents.push(agent);
        await waitRunning(agent, "s");
        agent.child.kill("SIGTERM");
        // A stop that honoured the pod's 100000 s would never end: the deadline fails the test.
        const status = await waitFor("the agent exiting", () =>
          agent.exited() && agent.child.status, {
          timeoutMs: 30_000,
        });
        const log = await agent.stderr;
        assertEquals(status.code, 0, log);
        assert(/"Killing pod" .*gracePeriod=2\b/.test(log), log);
        assertEquals(await processesMentioning(marker), []);
      }));

    await t.step(
      "a second signal kills the containers and running exec probes first",
      () =>
        withAgentDir(async (base, agents, marker) => {
          const probe = `probe-${marker}`;
          await Deno.writeTextFile(
            join(base, "pods", "s.yaml"),
            pod(
              "s",
              stubborn(marker),
              `    livenessProbe:
      exec:
        command: ["sh", "-c", "sleep 300 # ${probe}"]
      timeoutSeconds: 1000
      periodSeconds: 1
`,
            ),
          );
          const agent = spawnAgent(base, { port: randomPort() });
          agents.push(agent);
          await waitRunning(agent, "s");
          await waitFor(
            "the exec probe running",
            async () => (await processesMentioning(probe)).length > 0,
          );
          agent.child.kill("SIGTERM");
          // The CLI takes a signal within 1.5 s of the first as the same Ctrl-C (forwarded again by
          // `deno task`): this wait is that rule's, not a synchronisation.
          await new Promise((r) => setTimeout(r, 1_600));
          agent.child.kill("SIGTERM");
          const status = await agent.child.status;
          const log = await agent.stderr;
          assertEquals(status.code, 1, log);
          assert(log.includes("second signal, killing what is left and exiting"), log);
          // Nothing of ours is left: not the container, not the exec probe.
          assertEquals(await processesMentioning(marker), []);
        }),
    );

    await t.step(
      "pods left running: a stop kills the running exec probe, not the container",
      () =>
        withAgentDir(async (base, agents, marker) => {
          const probe = `probe-${marker}`;
          await Deno.writeTextFile(
            join(base, "pods", "s.yaml"),
            pod(
              "s",
              stubborn(marker),
              `    livenessProbe:
      exec:
        command: ["sh", "-c", "sleep 300 # ${probe}"]
      timeoutSeconds: 1000
      periodSeconds: 1
`,
            ),
          );
          const agent = spawnAgent(base, {
            port: randomPort(),
            extra: ["--stop-pods-on-exit=false"],
          });
          agents.push(agent);
          await waitRunning(agent, "s");
          await waitFor(
            "the exec probe running",
            async () => (await processesMentioning(probe)).length > 0,
          );
          const container = (await processesMentioning(marker)).filter((pid) =>
            !processesMentioningSync(pid, probe)
          );
          assert(container.length > 0, "the container's process");
          agent.child.kill("SIGTERM");
          const status = await agent.child.status;
          const log = await agent.stderr;
          assertEquals(status.code, 0, log);
          assertEquals(await processesMentioning(probe), [], "the exec probe was left running");
          assertEquals(
            (await processesMentioning(marker)).filter((pid) => container.includes(pid)),
            container,
            "the container keeps running for the next start",
          );
        }),
    );
  },
});

function processesMentioningSync(pid: number, text: string): boolean {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).includes(text);
  } catch {
    return false;
  }
}
