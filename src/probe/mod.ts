/**
 * The probe handlers kubelet's prober dispatches to (exec, HTTP, TCP, gRPC), their shared result
 * type, port resolution and the descriptor budget. Mirrors kubelet's pkg/probe.
 * @module
 */
export { type ProbeOutcome, ProbeResult } from "./probe.ts";
export { findPortByName, type PortResult, resolveContainerPort } from "./util.ts";
export { budgetCapacity, defaultProbeBudget, ProbeBudget } from "./budget.ts";
export {
  BufferWriter,
  type Cmd,
  CommandTimedOutError,
  commandTimedOutPrefix,
  drainAfterKillMs,
  type ExecProber,
  ExitError,
  type HostCommandOptions,
  type HostCommandResult,
  HostCommandRunner,
  isCommandTimedOut,
  isExitError,
  LimitWriter,
  MaximumWriteError,
  maxProbeOutputBytes,
  maxReadLength,
  newExecProber,
  resolveExecutable,
  runHostCommand,
  type WarningLogger,
  type Writer,
} from "./exec/mod.ts";
export {
  canonicalHeaderKey,
  type CheckRedirect,
  doHTTPProbe,
  errUseLastResponse,
  formatURL,
  type HeaderInit,
  HeaderMap,
  type HttpClient,
  type HttpProber,
  type HttpResponse,
  joinHostPort,
  maxRespBodyLength,
  newHttpClient,
  newHttpProber,
  newProbeRequest,
  newRequestForHTTPGetAction,
  type ProbeRequest,
  type ProbeRequestResult,
  ProbeURL,
  redirectChecker,
  v1HeaderToHTTPHeader,
  validHeaderFieldName,
  validHeaderFieldValue,
} from "./http/mod.ts";
export { newTcpProber, type TcpProber } from "./tcp/mod.ts";
export { type GrpcProber, newGrpcProber, type ServingStatus } from "./grpc/mod.ts";
