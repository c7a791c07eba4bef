/**
 * The entry point of one probe pool thread: runs the HTTP, TCP and gRPC handlers for the calls it
 * is sent and posts each outcome back. Calls and replies travel in batches, one message per turn
 * of either event loop, because a message costs more than a small probe.
 * @module
 */
import { newHttpProber } from "../http/http.ts";
import { newTcpProber } from "../tcp/tcp.ts";
import type { GrpcProber } from "../grpc/grpc.ts";
import type { ProbeOutcome } from "../probe.ts";
import { ProbeResult } from "../probe.ts";
import {
  outcomeToReply,
  type PoolCall,
  type PoolInit,
  type PoolReply,
  requestFromWire,
} from "./protocol.ts";

// deno-lint-ignore no-explicit-any
const scope = globalThis as any;

let handlers:
  | {
    http: ReturnType<typeof newHttpProber>;
    tcp: ReturnType<typeof newTcpProber>;
  }
  | undefined;

let outbox: PoolReply[] = [];
let flushQueued = false;

function reply(r: PoolReply): void {
  outbox.push(r);
  if (flushQueued) return;
  flushQueued = true;
  queueMicrotask(() => {
    flushQueued = false;
    const batch = outbox;
    outbox = [];
    scope.postMessage(batch);
  });
}

// The gRPC handler (its HTTP/2 client) is loaded by the first gRPC probe: a thread starts faster without.
let grpc: Promise<GrpcProber> | undefined;
function grpcProber(): Promise<GrpcProber> {
  grpc ??= import("../grpc/grpc.ts").then((m) => m.newGrpcProber());
  return grpc;
}

function run(call: PoolCall): Promise<ProbeOutcome> {
  const h = handlers!;
  switch (call.kind) {
    case "http":
      return h.http.probe(requestFromWire(call.request), { timeoutMs: call.timeoutMs });
    case "tcp":
      return h.tcp.probe(call.host, { port: call.port, timeoutMs: call.timeoutMs });
    case "grpc":
      return grpcProber().then((grpc) =>
        grpc.probe(call.host, { service: call.service, port: call.port, timeoutMs: call.timeoutMs })
      );
  }
}

scope.onmessage = (event: MessageEvent<{ init: PoolInit } | PoolCall[]>) => {
  const data = event.data;
  if (!Array.isArray(data)) {
    handlers = {
      http: newHttpProber({ followNonLocalRedirects: data.init.followNonLocalRedirects }),
      tcp: newTcpProber(),
    };
    return;
  }
  for (const call of data) {
    run(call).then(
      (outcome) => reply(outcomeToReply(call.id, outcome)),
      (err) =>
        reply(outcomeToReply(call.id, {
          result: ProbeResult.Unknown,
          output: "",
          error: err instanceof Error ? err : new Error(String(err)),
        })),
    );
  }
};
