/**
 * The environment variables that tell a container where the services it may need are: for each
 * service `<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT` (and one per named port) and the
 * docker-link style `<NAME>_PORT`, `<NAME>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]`.
 * Mirrors kubelet's pkg/kubelet/envvars/envvars.go (FromServices).
 * @module
 */
import type { EnvVar, Service } from "../../api/core/v1/mod.ts";
import { isServiceIPSet } from "../../api/core/v1/helper.ts";
import { joinHostPort } from "../../probe/http/url.ts";

/**
 * The service environment of `services`, in order; services without a cluster IP (`None` or
 * empty) are skipped.
 *
 * @example
 * ```ts
 * fromServices([{ metadata: { name: "kubernetes" }, spec: { clusterIP: "10.0.0.1", ports: [{ port: 443 }] } }]);
 * // KUBERNETES_SERVICE_HOST=10.0.0.1, KUBERNETES_SERVICE_PORT=443, KUBERNETES_PORT=tcp://10.0.0.1:443, ...
 * ```
 */
export function fromServices(services: Service[]): EnvVar[] {
  const result: EnvVar[] = [];
  for (const service of services) {
    if (!isServiceIPSet(service)) continue;
    const ports = service.spec?.ports ?? [];
    const prefix = makeEnvVariableName(service.metadata.name ?? "");
    result.push({ name: `${prefix}_SERVICE_HOST`, value: service.spec!.clusterIP! });
    // The first port keeps the backwards-compatible name; then every named port.
    const name = `${prefix}_SERVICE_PORT`;
    // Validation requires a port; Go would panic on none, kubelet never sees one.
    if (ports.length === 0) continue;
    result.push({ name, value: String(ports[0].port) });
    for (const sp of ports) {
      if (sp.name) {
        result.push({ name: `${name}_${makeEnvVariableName(sp.name)}`, value: String(sp.port) });
      }
    }
    result.push(...makeLinkVariables(service, prefix));
  }
  return result;
}

/** `my-svc.x` → `MY_SVC_X`; a leading digit gets a `_` in front. */
function makeEnvVariableName(str: string): string {
  const name = str.replaceAll(".", "_").replaceAll("-", "_").toUpperCase();
  return /^[0-9]/.test(name) ? `_${name}` : name;
}

// Docker's link variables: the first port as `<NAME>_PORT`, then four per port.
function makeLinkVariables(service: Service, prefix: string): EnvVar[] {
  const clusterIP = service.spec!.clusterIP!;
  const all: EnvVar[] = [];
  (service.spec?.ports ?? []).forEach((sp, i) => {
    const protocol = sp.protocol || "TCP";
    const hostPort = joinHostPort(clusterIP, String(sp.port));
    const url = `${protocol.toLowerCase()}://${hostPort}`;
    if (i === 0) all.push({ name: `${prefix}_PORT`, value: url });
    const portPrefix = `${prefix}_PORT_${sp.port}_${protocol.toUpperCase()}`;
    all.push(
      { name: portPrefix, value: url },
      { name: `${portPrefix}_PROTO`, value: protocol.toLowerCase() },
      { name: `${portPrefix}_PORT`, value: String(sp.port) },
      { name: `${portPrefix}_ADDR`, value: clusterIP },
    );
  });
  return all;
}
