/**
 * The gRPC probe: one grpc.health.v1 `Check` call over an insecure channel, healthy when the
 * server answers SERVING. Mirrors kubelet's pkg/probe/grpc/grpc.go.
 *
 * Deviations: the user agent is `kube-probe/1.35 grpc-node-js/<version>` (grpc-go appends its own
 * token the same way), and the probe socket does not get kubelet's 1 s SO_LINGER.
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { fileURLToPath } from "node:url";
import { type ProbeOutcome, ProbeResult } from "../probe.ts";
import { goDuration, goQuote } from "../../util/go_format.ts";
import { kubeUserAgent } from "../../version.ts";
import { joinHostPort } from "../tcp/tcp.ts";
import { grpcCodeName } from "../../util/grpc_codes.ts";

/**
 * Checks a container with the gRPC health checking protocol. Never returns an error: every
 * problem is a Failure with kubelet's text as output.
 *
 * @example
 * ```ts
 * const outcome = await newGrpcProber().probe("10.0.0.5", { service: "", port: 9090, timeoutMs: 1000 });
 * outcome.output; // "service healthy" when the server answered SERVING
 * ```
 */
export interface GrpcProber {
  /** Connects to `host:port` and calls `Check({service})`, all within one `timeoutMs` deadline. */
  probe(
    host: string,
    options: { service: string; port: number; timeoutMs: number },
  ): Promise<ProbeOutcome>;
}

/**
 * Creates a gRPC health prober.
 *
 * @example
 * ```ts
 * const prober = newGrpcProber();
 * const { result } = await prober.probe("", { service: "", port: 32, timeoutMs: 1000 });
 * // result "failure", output 'timeout: failed to connect service ":32" within 1s: context deadline exceeded'
 * ```
 */
export function newGrpcProber(): GrpcProber {
  return { probe: (host, options) => doGrpcProbe(host, options) };
}

/** The grpc.health.v1 `HealthCheckResponse.ServingStatus` names. */
export type ServingStatus = "UNKNOWN" | "SERVING" | "NOT_SERVING" | "SERVICE_UNKNOWN";

/**
 * The loaded grpc.health.v1 package: the `Health` client constructor and its service definition
 * (servers pass `health.service` to `addService`).
 *
 * @example
 * ```ts
 * const server = new grpc.Server();
 * server.addService(healthPackage().service, { check: (_call, cb) => cb(null, { status: "SERVING" }) });
 * ```
 */
export function healthPackage(): grpc.ServiceClientConstructor {
  if (!loadedHealth) {
    const path = fileURLToPath(
      new URL("../../../proto/grpc/health/v1/health.proto", import.meta.url),
    );
    // Enums as names and defaults filled in, so an omitted status reads "UNKNOWN" as in Go.
    const definition = protoLoader.loadSync(path, { enums: String, defaults: true });
    const loaded = grpc.loadPackageDefinition(definition) as unknown as {
      grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
    };
    loadedHealth = loaded.grpc.health.v1.Health;
  }
  return loadedHealth;
}

let loadedHealth: grpc.ServiceClientConstructor | undefined;

async function doGrpcProbe(
  host: string,
  options: { service: string; port: number; timeoutMs: number },
): Promise<ProbeOutcome> {
  const { service, port, timeoutMs } = options;
  const addr = joinHostPort(host, `${port}`);
  // One deadline covers connecting and the call, like the context kubelet creates.
  const deadline = Date.now() + timeoutMs;
  let client: grpc.Client | undefined;
  try {
    try {
      const Health = healthPackage();
      // Go dials the local system for an empty host.
      const target = joinHostPort(host === "" ? "127.0.0.1" : host, `${port}`);
      client = new Health(target, grpc.credentials.createInsecure(), {
        "grpc.primary_user_agent": kubeUserAgent(),
        // kubelet dials with its own dialer, which bypasses proxies.
        "grpc.enable_http_proxy": 0,
        // A fresh connection per probe, as grpc.Dial gives kubelet; no subchannel shared with others.
        "grpc.use_local_subchannel_pool": 1,
        // No DNS TXT lookups for a service config; grpc-go does not do them by default either.
        "grpc.service_config_disable_resolution": 1,
      });
      await waitForReady(client, deadline);
    } catch (err) {
      if (isDeadlineError(err) || Date.now() >= deadline) {
        return failure(
          `timeout: failed to connect service ${goQuote(addr)} within ${
            goDuration(timeoutMs)
          }: context deadline exceeded`,
        );
      }
      return failure(`error: failed to connect service at ${goQuote(addr)}: ${errorText(err)}`);
    }

    let response: { status?: ServingStatus | number };
    try {
      response = await check(client, service, deadline);
    } catch (err) {
      const code = (err as Partial<grpc.ServiceError>).code;
      if (code === grpc.status.UNIMPLEMENTED) {
        return failure(
          "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " +
            ((err as grpc.ServiceError).details ?? ""),
        );
      }
      if (code === grpc.status.DEADLINE_EXCEEDED) {
        return failure(`timeout: health rpc did not complete within ${goDuration(timeoutMs)}`);
      }
      return failure(`error: health rpc probe failed: ${errorText(err)}`);
    }

    const status = String(response.status ?? "UNKNOWN");
    if (status !== "SERVING") {
      return failure(`service unhealthy (responded with ${goQuote(status)})`);
    }
    return { result: ProbeResult.Success, output: "service healthy" };
  } finally {
    client?.close();
  }
}

function failure(output: string): ProbeOutcome {
  return { result: ProbeResult.Failure, output };
}

// grpc-js's waitForReady gives this text when the deadline passed before the channel was ready.
function isDeadlineError(err: unknown): boolean {
  return err instanceof Error && err.message === "Failed to connect before the deadline";
}

function waitForReady(client: grpc.Client, deadline: number): Promise<void> {
  return new Promise((resolve, reject) => {
    client.waitForReady(deadline, (err) => err ? reject(err) : resolve());
  });
}

function check(
  client: grpc.Client,
  service: string,
  deadline: number,
): Promise<{ status?: ServingStatus | number }> {
  const call = (client as unknown as {
    check: (
      request: { service: string },
      metadata: grpc.Metadata,
      options: grpc.CallOptions,
      callback: (err: grpc.ServiceError | null, response?: { status?: ServingStatus }) => void,
    ) => void;
  }).check.bind(client);
  return new Promise((resolve, reject) => {
    // Empty metadata, as kubelet sends.
    call({ service }, new grpc.Metadata(), { deadline }, (err, response) => {
      if (err) reject(err);
      else resolve(response ?? {});
    });
  });
}

// Go's %+v of a gRPC status error is `rpc error: code = <Name> desc = <message>`.
function errorText(err: unknown): string {
  const code = (err as Partial<grpc.ServiceError>)?.code;
  if (typeof code === "number") {
    const name = grpcCodeName(code);
    return `rpc error: code = ${name} desc = ${(err as grpc.ServiceError).details ?? ""}`;
  }
  return err instanceof Error ? err.message : String(err);
}
