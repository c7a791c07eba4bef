/**
 * A CRI runtime's streaming server (exec, attach and port-forward over SPDY/3.1), for runtimes
 * that have none of their own: probelet's embedded runtime. Mirrors `k8s.io/cri-streaming`.
 * @module
 */
export {
  type AttachRequest,
  defaultStreamIdleTimeoutMs,
  type ExecRequest,
  type PortForwardRequest,
  type StreamingResponse,
  type StreamingRuntime,
  StreamingServer,
  type StreamingServerOptions,
} from "./server.ts";
export {
  CodeExitError,
  type CommandStreams,
  type InputStream,
  type OutputStream,
  supportedStreamingProtocols,
  type TerminalSize,
} from "./remotecommand.ts";
export { supportedPortForwardProtocols } from "./portforward.ts";
export { cacheTtlMs, StreamingError } from "./request_cache.ts";
export type { SpdyStream } from "./spdy/connection.ts";
export { type Duplex, forwardCloseGraceMs, forwardConn, pipeInput, pipeOutput } from "./io.ts";
