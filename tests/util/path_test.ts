/** joinInside: names from manifests stay one path segment under the folder they are joined to. */
import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import { joinInside, UnsafePathError } from "../../src/util/path.ts";
import {
  buildContainerLogsDirectory,
  buildPodLogsDirectory,
} from "../../src/kubelet/kuberuntime/helpers.ts";

Deno.test("joinInside keeps every segment inside the root", async (t) => {
  await t.step("plain names", () => {
    assertEquals(joinInside("/root/pods", "default_web_1", "app"), "/root/pods/default_web_1/app");
    assertEquals(joinInside("/root/pods/"), "/root/pods");
  });
  for (const bad of ["..", ".", "", "a/b", "../../../../tmp/x", "x\0y", "/etc"]) {
    await t.step(`refuses ${JSON.stringify(bad)}`, () => {
      throws(() => joinInside("/root/pods", bad), UnsafePathError);
    });
  }
  await t.step("pod and container log folders", () => {
    assertEquals(
      buildPodLogsDirectory("/r/pods", { namespace: "default", name: "web", uid: "u-1" }),
      "/r/pods/default_web_u-1",
    );
    throws(
      () => buildPodLogsDirectory("/r/pods", { namespace: "default", name: "web", uid: "a/b" }),
      UnsafePathError,
    );
    throws(() => buildContainerLogsDirectory("/r/pods/default_web_1", ".."), UnsafePathError);
  });
});
