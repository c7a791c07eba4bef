/**
 * `$(VAR)` expansion of container commands and args against the container's environment.
 * Mirrors ExpandContainerCommandAndArgs, ExpandContainerCommandOnlyStatic and EnvVarsToMap in
 * kubelet's pkg/kubelet/container/helpers.go; the expansion itself is
 * third_party/forked/golang/expansion.
 * @module
 */
import type { Container, EnvVar } from "../../api/core/v1/mod.ts";
import { expand, mappingFuncFor } from "../../third_party/forked/golang/expansion/expand.ts";

export { expand, mappingFuncFor };

/**
 * The variables as a map, a later one replacing an earlier one of the same name (kubelet's
 * `EnvVarsToMap`).
 *
 * @example
 * ```ts
 * envVarsToMap([{ name: "A", value: "1" }]).get("A"); // "1"
 * ```
 */
export function envVarsToMap(envs: readonly EnvVar[]): Map<string, string> {
  const result = new Map<string, string>();
  for (const env of envs) result.set(env.name, env.value ?? "");
  return result;
}

/**
 * The container's command and args with `$(VAR)` expanded against `envs`, the environment
 * `makeEnvironmentVariables` built; an unknown variable stays `$(VAR)`.
 *
 * @example
 * ```ts
 * expandContainerCommandAndArgs({ name: "c", command: ["echo", "$(A)"] }, [{ name: "A", value: "x" }]);
 * // { command: ["echo", "x"], args: undefined }
 * ```
 */
export function expandContainerCommandAndArgs(
  container: Container,
  envs: readonly EnvVar[],
): { command?: string[]; args?: string[] } {
  const mapping = mappingFuncFor(envVarsToMap(envs));
  return {
    command: container.command?.length
      ? container.command.map((c) => expand(c, mapping))
      : undefined,
    args: container.args?.length ? container.args.map((a) => expand(a, mapping)) : undefined,
  };
}

/**
 * Expands a container command against the container's own env vars with literal values only:
 * a `valueFrom` variable maps to `""` (its empty `value`), an unknown one stays `$(VAR)`.
 * Exec probes see neither the pod environment nor the downward API, as in kubelet.
 *
 * @example
 * ```ts
 * expandContainerCommandOnlyStatic(["sh", "-c", "some $(A) $(B)"], [{ name: "A", value: "script" }]);
 * // ["sh", "-c", "some script $(B)"]
 * ```
 */
export function expandContainerCommandOnlyStatic(command: string[], envs?: EnvVar[]): string[] {
  const mapping = mappingFuncFor(envVarsToMap(envs ?? []));
  return command.map((arg) => expand(arg, mapping));
}
