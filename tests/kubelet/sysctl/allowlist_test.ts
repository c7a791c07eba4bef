import { deepStrictEqual as assertEquals, throws as assertThrows } from "node:assert/strict";
import type { Pod } from "../../../src/api/core/v1/mod.ts";
import { ForbiddenReason, newAllowlist } from "../../../src/kubelet/sysctl/allowlist.ts";
import { namespacedBy, normalizeName } from "../../../src/kubelet/sysctl/namespace.ts";
import { getSafeSysctlAllowlist } from "../../../src/kubelet/sysctl/safe_sysctls.ts";

Deno.test("TestNewAllowlist", async (t) => {
  const cases: { sysctls: string[]; err?: boolean }[] = [
    { sysctls: ["kernel.msg*", "kernel.sem"] },
    { sysctls: [" kernel.msg*"], err: true },
    { sysctls: ["kernel.msg* "], err: true },
    { sysctls: ["net.*.foo"], err: true },
    { sysctls: ["net.*/foo"], err: true },
    { sysctls: ["net/ipv4/*"] },
    { sysctls: ["foo"], err: true },
  ];
  for (const c of cases) {
    await t.step(JSON.stringify(c.sysctls), () => {
      if (c.err) assertThrows(() => newAllowlist(c.sysctls));
      else newAllowlist(c.sysctls);
    });
  }
});

Deno.test("TestAllowlist", async (t) => {
  const valid: { sysctl: string; hostNet?: boolean; hostIPC?: boolean }[] = [
    { sysctl: "kernel.shm_rmid_forced" },
    { sysctl: "net.ipv4.ip_local_port_range" },
    { sysctl: "kernel.msgmax" },
    { sysctl: "kernel.sem" },
    { sysctl: "net/ipv4/ip_local_port_range" },
  ];
  const invalid: { sysctl: string; hostNet?: boolean; hostIPC?: boolean; message: string }[] = [
    {
      sysctl: "kernel.sem",
      hostIPC: true,
      message: `"kernel.sem" not allowed with host ipc enabled`,
    },
    {
      sysctl: "net.ipv4.ip_local_port_range",
      hostNet: true,
      message: `"net.ipv4.ip_local_port_range" not allowed with host net enabled`,
    },
    { sysctl: "foo", message: `"foo" not allowlisted` },
    { sysctl: "vm.swappiness", message: `"vm.swappiness" not allowlisted` },
  ];
  const w = newAllowlist([...getSafeSysctlAllowlist("5.10.0"), "kernel.msg*", "kernel.sem"]);
  for (const v of valid) {
    await t.step(`valid ${v.sysctl}`, () => {
      assertEquals(w.validateSysctl(v.sysctl, v.hostNet ?? false, v.hostIPC ?? false), undefined);
    });
  }
  for (const v of invalid) {
    await t.step(`invalid ${v.sysctl}`, () => {
      assertEquals(
        w.validateSysctl(v.sysctl, v.hostNet ?? false, v.hostIPC ?? false)?.message,
        v.message,
      );
    });
  }
});

Deno.test("TestAllowlistAdmit", async (t) => {
  const w = newAllowlist(getSafeSysctlAllowlist("5.10.0"));
  const pod = (sysctls: { name: string; value: string }[], hostNetwork = false): Pod => ({
    metadata: { name: "p" },
    spec: { hostNetwork, securityContext: { sysctls }, containers: [{ name: "c" }] },
  });
  await t.step("safe sysctls are admitted", () => {
    assertEquals(
      w.admit({ pod: pod([{ name: "net.ipv4.tcp_syncookies", value: "1" }]), otherPods: [] }),
      {
        admit: true,
      },
    );
  });
  await t.step("an unsafe sysctl is SysctlForbidden", () => {
    assertEquals(w.admit({ pod: pod([{ name: "kernel.msgmax", value: "1" }]), otherPods: [] }), {
      admit: false,
      reason: ForbiddenReason,
      message: `forbidden sysctl: "kernel.msgmax" not allowlisted`,
    });
  });
  await t.step("a net sysctl with hostNetwork is SysctlForbidden", () => {
    const result = w.admit({
      pod: pod([{ name: "net.ipv4.tcp_syncookies", value: "1" }], true),
      otherPods: [],
    });
    assertEquals(result.reason, "SysctlForbidden");
    assertEquals(
      result.message,
      `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled`,
    );
  });
});

Deno.test("TestSafeSysctlAllowlist", async (t) => {
  await t.step("kernel 4.4 lacks the keepalive and fin_timeout sysctls", () => {
    assertEquals(getSafeSysctlAllowlist("4.4.0-1"), [
      "kernel.shm_rmid_forced",
      "net.ipv4.ip_local_port_range",
      "net.ipv4.tcp_syncookies",
      "net.ipv4.ping_group_range",
      "net.ipv4.ip_unprivileged_port_start",
      "net.ipv4.ip_local_reserved_ports",
      "net.ipv4.tcp_rmem",
      "net.ipv4.tcp_wmem",
    ]);
  });
  await t.step("kernel 5.15 has all twelve", () => {
    assertEquals(getSafeSysctlAllowlist("5.15.0").length, 12);
  });
  await t.step("an unreadable version keeps only the unconditional ones", () => {
    assertEquals(getSafeSysctlAllowlist("").length, 7);
  });
});

Deno.test("TestNamespacedBy", () => {
  assertEquals(namespacedBy("kernel.shm_rmid_forced"), "ipc");
  assertEquals(namespacedBy("fs.mqueue.msg_max"), "ipc");
  assertEquals(namespacedBy("net.core.somaxconn"), "net");
  assertEquals(namespacedBy("kernel.panic"), "");
});

Deno.test("TestConvertSysctlVariableToDotsSeparator", async (t) => {
  const cases: [string, string][] = [
    ["", ""],
    ["net.ipv4.conf.eno2/100.rp_filter", "net.ipv4.conf.eno2/100.rp_filter"],
    ["net/ipv4/conf/eno2.100/rp_filter", "net.ipv4.conf.eno2/100.rp_filter"],
    ["net/ipv4/ip_local_port_range", "net.ipv4.ip_local_port_range"],
    ["kernel", "kernel"],
  ];
  for (const [input, want] of cases) {
    await t.step(input || "(empty)", () => assertEquals(normalizeName(input), want));
  }
});
