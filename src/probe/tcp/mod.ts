/**
 * The TCP socket probe handler.
 * @module
 */
export { newTcpProber, type TcpProber } from "./tcp.ts";
