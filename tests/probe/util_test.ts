/**
 * Tests for probe port resolution; mirrors kubelet's pkg/probe/util_test.go.
 * @module
 */
import assert from "node:assert/strict";
import type { Container, IntOrString } from "../../src/api/core/v1/mod.ts";
import { findPortByName, resolveContainerPort } from "../../src/probe/util.ts";

const container: Container = {
  name: "test",
  ports: [
    { name: "foo", containerPort: 8080 },
    { name: "bar", containerPort: 9000 },
  ],
};

Deno.test("TestFindPortByName", async (t) => {
  await t.step("foo → 8080", () => {
    assert.deepEqual(findPortByName(container, "foo"), { port: 8080 });
  });
  await t.step("bar → 9000", () => {
    assert.deepEqual(findPortByName(container, "bar"), { port: 9000 });
  });
  await t.step("http → 0 and an error", () => {
    const { port, error } = findPortByName(container, "http");
    assert.equal(port, 0);
    assert.equal(error?.message, "port http not found");
  });
  await t.step("the first port with the name wins", () => {
    const twice: Container = {
      name: "dup",
      ports: [{ name: "p", containerPort: 1 }, { name: "p", containerPort: 2 }],
    };
    assert.deepEqual(findPortByName(twice, "p"), { port: 1 });
  });
  await t.step("a container without ports finds nothing", () => {
    assert.equal(findPortByName({ name: "bare" }, "foo").port, 0);
  });
});

Deno.test("TestResolveContainerPort", async (t) => {
  await t.step("Int 443 → 443", () => {
    assert.deepEqual(resolveContainerPort(443, container), { port: 443 });
  });
  await t.step("Int 66666 → 66666 and an error", () => {
    const { port, error } = resolveContainerPort(66666, container);
    assert.equal(port, 66666);
    assert.equal(error?.message, "invalid port number: 66666");
  });
  await t.step("Int 0 → 0 and an error", () => {
    const { port, error } = resolveContainerPort(0, container);
    assert.equal(port, 0);
    assert.equal(error?.message, "invalid port number: 0");
  });
  await t.step("String foo → 8080", () => {
    assert.deepEqual(resolveContainerPort("foo", container), { port: 8080 });
  });
  await t.step("String foo absent → 0 and an error", () => {
    const { port, error } = resolveContainerPort("foo", { name: "noports", ports: [] });
    assert.equal(port, 0);
    assert.equal(error?.message, "port foo not found");
  });
  await t.step('String "8080" is a name, not a number', () => {
    const { port, error } = resolveContainerPort("8080", container);
    assert.equal(port, 0);
    assert.equal(error?.message, "port 8080 not found");
  });
  await t.step("no kind → -1 and an error", () => {
    const noKind = { type: 2 } as unknown as IntOrString;
    const { port, error } = resolveContainerPort(noKind, container);
    assert.equal(port, -1);
    assert.match(error?.message ?? "", /^intOrString had no kind: /);
  });
});
