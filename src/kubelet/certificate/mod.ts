/**
 * kubelet's serving certificates: requested through the CSR API and rotated
 * (`--rotate-server-certificates`), or read from files and reloaded when they change.
 * @module
 */
export * from "./certificate_store.ts";
export * from "./csr.ts";
export * from "./certificate_manager.ts";
export * from "./kubelet.ts";
