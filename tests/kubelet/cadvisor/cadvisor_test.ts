/**
 * The machine facts node status reports: the system UUID read in cAdvisor's order of files
 * (utils/sysfs GetSystemUUID).
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { getSystemUUID } from "../../../src/kubelet/cadvisor/cadvisor.ts";

Deno.test("TestGetSystemUUID", async (t) => {
  const reader = (files: Record<string, string>) => (path: string) => files[path];
  const cases: { name: string; files: Record<string, string>; want: string }[] = [
    {
      name: "DMI product UUID first",
      files: {
        "/sys/class/dmi/id/product_uuid": "4C4C4544-0039-4D10-8048-B4C04F4B3832\n",
        "/etc/machine-id": "3d1219c7c4c5404aaa1f6d2a48adfda4\n",
      },
      want: "4C4C4544-0039-4D10-8048-B4C04F4B3832",
    },
    {
      name: "POWER device tree system-id, NULs cut",
      files: { "/proc/device-tree/system-id": "IBM,0212345\0", "/etc/machine-id": "m\n" },
      want: "IBM,0212345",
    },
    {
      name: "POWER device tree vm,uuid",
      files: { "/proc/device-tree/vm,uuid": "1234-abcd\0\0" },
      want: "1234-abcd",
    },
    {
      name: "no DMI (a container): /etc/machine-id, as cAdvisor falls back on every architecture",
      files: { "/etc/machine-id": "3d1219c7c4c5404aaa1f6d2a48adfda4\n" },
      want: "3d1219c7c4c5404aaa1f6d2a48adfda4",
    },
    { name: "nothing readable → empty", files: {}, want: "" },
  ];
  for (const c of cases) {
    await t.step(c.name, () => assertEquals(getSystemUUID(reader(c.files)), c.want));
  }
});
