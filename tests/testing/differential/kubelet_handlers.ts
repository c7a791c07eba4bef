/**
 * Talks to the kubelet-handlers program (scripts/kubelet-handlers/main.go): kubelet v1.36.3's own
 * `pkg/probe/http` and `pkg/probe/grpc` handlers, fed one JSON case per line, answering one
 * verdict per line. The program is found through `PROBELET_KUBELET_HANDLERS` or the build script's
 * cache path; when Go or the binary is missing, `findKubeletHandlers` says why instead.
 * Mirrors nothing upstream: test tooling.
 * @module
 */

/** A case for kubelet's handlers, as the program reads it. */
export type KubeletCase =
  | { kind: "http"; url: string; timeoutMs: number; followNonLocalRedirects?: boolean }
  | { kind: "grpc"; host: string; port: number; service: string; timeoutMs: number };

/** kubelet's verdict: its `(probe.Result, string, error)` with the error as text ("" for nil). */
export interface KubeletVerdict {
  result: "success" | "warning" | "failure" | "unknown";
  output: string;
  error: string;
  elapsedMs: number;
}

/** The binary's path, or why it cannot be used (the test prints this and skips). */
export type Located = { path: string } | { missing: string };

const repo = new URL("../../../", import.meta.url);

/**
 * Finds the built program: `PROBELET_KUBELET_HANDLERS`, else `scripts/kubelet-handlers.sh path`.
 *
 * @example
 * ```ts
 * const found = await findKubeletHandlers();
 * if ("missing" in found) console.log(`skipped: ${found.missing}`);
 * ```
 */
export async function findKubeletHandlers(): Promise<Located> {
  const fromEnv = Deno.env.get("PROBELET_KUBELET_HANDLERS");
  if (fromEnv) {
    try {
      await Deno.stat(fromEnv);
      return { path: fromEnv };
    } catch {
      return { missing: `PROBELET_KUBELET_HANDLERS=${fromEnv} does not exist` };
    }
  }
  const script = new URL("scripts/kubelet-handlers.sh", repo).pathname;
  const out = await new Deno.Command("bash", {
    args: [script, "path"],
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  if (out.success) return { path: new TextDecoder().decode(out.stdout).trim() };
  const goMissing = !(await hasGo());
  return {
    missing: goMissing
      ? "go not found: kubelet's handlers are built from Go modules (bash scripts/kubelet-handlers.sh build)"
      : "kubelet's handlers are not built: run bash scripts/kubelet-handlers.sh build",
  };
}

async function hasGo(): Promise<boolean> {
  try {
    return (await new Deno.Command("go", { args: ["version"], stdout: "null", stderr: "null" })
      .output())
      .success;
  } catch {
    return false;
  }
}

/**
 * One running kubelet-handlers process; `probe` may be called concurrently (the program runs each
 * case on its own goroutine). `close()` ends stdin and waits for the process.
 *
 * @example
 * ```ts
 * const handlers = KubeletHandlers.start(path);
 * try {
 *   const v = await handlers.probe({ kind: "http", url: "http://127.0.0.1:8080/", timeoutMs: 1000 });
 * } finally {
 *   await handlers.close();
 * }
 * ```
 */
export class KubeletHandlers {
  #child: Deno.ChildProcess;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #pending = new Map<number, (v: KubeletVerdict) => void>();
  #nextId = 1;
  #done: Promise<void>;

  private constructor(path: string) {
    this.#child = new Deno.Command(path, { stdin: "piped", stdout: "piped", stderr: "inherit" })
      .spawn();
    this.#writer = this.#child.stdin.getWriter();
    this.#done = this.#readVerdicts();
  }

  /** Starts the program at `path`. */
  static start(path: string): KubeletHandlers {
    return new KubeletHandlers(path);
  }

  /** Runs one case with kubelet's handler. */
  probe(c: KubeletCase): Promise<KubeletVerdict> {
    const id = this.#nextId++;
    const answer = new Promise<KubeletVerdict>((resolve) => this.#pending.set(id, resolve));
    const line = JSON.stringify({ id, ...c }) + "\n";
    this.#writer.write(new TextEncoder().encode(line)).catch(() => {});
    return answer;
  }

  /** Closes stdin and waits until the program exits. */
  async close(): Promise<void> {
    await this.#writer.close().catch(() => {});
    await this.#done;
    await this.#child.status;
  }

  async #readVerdicts(): Promise<void> {
    const lines = this.#child.stdout.pipeThrough(new TextDecoderStream()).pipeThrough(
      new LineSplitter(),
    );
    for await (const line of lines) {
      if (line === "") continue;
      const v = JSON.parse(line) as KubeletVerdict & { id: number };
      this.#pending.get(v.id)?.(v);
      this.#pending.delete(v.id);
    }
    for (const [id, resolve] of this.#pending) {
      resolve({ result: "unknown", output: "", error: "kubelet-handlers exited", elapsedMs: 0 });
      this.#pending.delete(id);
    }
  }
}

class LineSplitter extends TransformStream<string, string> {
  constructor() {
    let rest = "";
    super({
      transform(chunk, controller) {
        const parts = (rest + chunk).split("\n");
        rest = parts.pop()!;
        for (const part of parts) controller.enqueue(part);
      },
      flush(controller) {
        if (rest !== "") controller.enqueue(rest);
      },
    });
  }
}
