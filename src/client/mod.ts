/**
 * A client-go-shaped Kubernetes client over Deno's fetch: kubeconfig loading, the REST client,
 * typed clientset, API errors.
 * @module
 */
export * from "./errors.ts";
export * from "./kubeconfig.ts";
export * from "./rest.ts";
export * from "./kubernetes/clientset.ts";
