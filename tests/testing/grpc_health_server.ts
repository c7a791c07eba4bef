/**
 * A real grpc.health.v1 server on 127.0.0.1 for tests, like the mocks in kubelet's
 * pkg/probe/grpc/grpc_test.go: a fixed (changeable) status, an optional delay before `Check`
 * answers, or no Health service at all.
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import type { ServingStatus } from "../../src/probe/grpc/grpc.ts";
import { healthPackage } from "../../src/probe/grpc/health_package.ts";

/** What the server saw of one `Check` call. */
export interface HealthRequestRecord {
  service: string;
  /** The `user-agent` header as received. */
  userAgent: string;
  /** Metadata keys other than the transport's own (`user-agent`, `content-type`, `te`, ...). */
  customMetadataKeys: string[];
}

/** A running health server; always `close()` it (in `finally`). */
export interface HealthServer {
  port: number;
  /** Changes the status later `Check` and `Watch` calls answer with. */
  setStatus(status: ServingStatus): void;
  /** `Check` calls received so far, in order. */
  requests: HealthRequestRecord[];
  /** Stops the server at once, dropping calls in flight and pending delays. */
  close(): Promise<void>;
}

// Headers every grpc-js call carries; anything else is metadata the client chose to send.
const transportHeaders = new Set([
  "user-agent",
  "content-type",
  "te",
  "grpc-accept-encoding",
  "grpc-encoding",
  "grpc-timeout",
  "accept-encoding",
]);

/**
 * Starts a health server on 127.0.0.1 (port 0 = any free port).
 *
 * @example
 * ```ts
 * const server = await startHealthServer({ status: "NOT_SERVING" });
 * try {
 *   await newGrpcProber().probe("127.0.0.1", { service: "", port: server.port, timeoutMs: 1000 });
 * } finally {
 *   await server.close();
 * }
 * ```
 */
export async function startHealthServer(
  options: {
    status?: ServingStatus;
    /** Delay before `Check` answers (kubelet's timeout mock sleeps 4 s). */
    delayMs?: number;
    /** false registers no Health service, so calls fail with UNIMPLEMENTED. */
    implementHealth?: boolean;
    port?: number;
  } = {},
): Promise<HealthServer> {
  let status: ServingStatus = options.status ?? "SERVING";
  const delayMs = options.delayMs ?? 0;
  const pendingDelays = new Set<ReturnType<typeof setTimeout>>();
  const requests: HealthRequestRecord[] = [];
  const server = new grpc.Server();

  if (options.implementHealth ?? true) {
    server.addService(healthPackage().service, {
      check(
        call: grpc.ServerUnaryCall<{ service: string }, { status: ServingStatus }>,
        callback: grpc.sendUnaryData<{ status: ServingStatus }>,
      ) {
        const metadata = call.metadata.getMap();
        requests.push({
          service: call.request.service,
          userAgent: String(metadata["user-agent"] ?? ""),
          customMetadataKeys: Object.keys(metadata).filter((k) => !transportHeaders.has(k)),
        });
        if (delayMs <= 0) return callback(null, { status });
        const id = setTimeout(() => {
          pendingDelays.delete(id);
          callback(null, { status });
        }, delayMs);
        pendingDelays.add(id);
      },
      watch(call: grpc.ServerWritableStream<{ service: string }, { status: ServingStatus }>) {
        call.write({ status });
        call.end();
      },
    });
  }

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      `127.0.0.1:${options.port ?? 0}`,
      grpc.ServerCredentials.createInsecure(),
      (err, bound) => err ? reject(err) : resolve(bound),
    );
  });

  return {
    port,
    requests,
    setStatus(next) {
      status = next;
    },
    close() {
      for (const id of pendingDelays) clearTimeout(id);
      pendingDelays.clear();
      server.forceShutdown();
      return Promise.resolve();
    },
  };
}
