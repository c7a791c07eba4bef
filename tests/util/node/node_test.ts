import { deepStrictEqual as assertEquals, throws as assertThrows } from "node:assert/strict";
import type { NodeAddress } from "../../../src/api/core/v1/mod.ts";
import { getNodeHostIPs } from "../../../src/util/node/node.ts";

const internal = (address: string): NodeAddress => ({ type: "InternalIP", address });
const external = (address: string): NodeAddress => ({ type: "ExternalIP", address });

Deno.test("TestGetNodeHostIPs", async (t) => {
  const cases: { name: string; addresses: NodeAddress[]; expectIPs?: string[] }[] = [
    { name: "no addresses", addresses: [] },
    { name: "no InternalIP/ExternalIP", addresses: [{ type: "Hostname", address: "n1.example" }] },
    {
      name: "IPv4 only: the InternalIP",
      addresses: [internal("10.0.0.4"), external("192.0.2.1"), external("192.0.2.2")],
      expectIPs: ["10.0.0.4"],
    },
    {
      name: "IPv4 only, ExternalIPs listed first: still the InternalIP",
      addresses: [external("192.0.2.1"), external("192.0.2.2"), internal("10.0.0.4")],
      expectIPs: ["10.0.0.4"],
    },
    {
      name: "IPv4 only, no InternalIP: the first ExternalIP",
      addresses: [external("192.0.2.1"), external("192.0.2.2")],
      expectIPs: ["192.0.2.1"],
    },
    {
      name: "IPv4 first, dual-stack InternalIPs",
      addresses: [internal("10.0.0.4"), internal("fd00::4"), internal("10.0.0.5")],
      expectIPs: ["10.0.0.4", "fd00::4"],
    },
    {
      name: "IPv6 first, dual-stack InternalIPs",
      addresses: [internal("fd00::4"), internal("10.0.0.4")],
      expectIPs: ["fd00::4", "10.0.0.4"],
    },
    {
      name: "IPv4 InternalIP, IPv6 only as an ExternalIP",
      addresses: [external("2001:db8::1"), internal("10.0.0.4"), external("192.0.2.1")],
      expectIPs: ["10.0.0.4", "2001:db8::1"],
    },
    {
      name: "an address that is not an IP is skipped",
      addresses: [internal("not-an-ip"), internal("10.0.0.4")],
      expectIPs: ["10.0.0.4"],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const node = { metadata: { name: "n1" }, status: { addresses: c.addresses } };
      if (c.expectIPs === undefined) {
        assertThrows(() => getNodeHostIPs(node), /^Error: host IP unknown; known addresses: \[/);
      } else {
        assertEquals(getNodeHostIPs(node), c.expectIPs);
      }
    });
  }
  assertThrows(
    () =>
      getNodeHostIPs({
        metadata: {},
        status: { addresses: [{ type: "Hostname", address: "n1" }] },
      }),
    { message: "host IP unknown; known addresses: [{Hostname n1}]" },
  );
});
