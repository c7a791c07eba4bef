/**
 * Tests of API error classification (apimachinery's errors_test.go, the cases probelet relies on).
 * @module
 */
import assert from "node:assert/strict";
import {
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isNotFound,
  isResourceExpired,
  isTooManyRequests,
  newConflict,
  newNotFound,
  reasonForError,
  StatusError,
  suggestsClientDelay,
} from "../../src/client/errors.ts";

Deno.test("TestErrorNew", async (t) => {
  await t.step("NotFound names group and resource like Go's GroupResource.String()", () => {
    const err = newNotFound({ group: "coordination.k8s.io", resource: "leases" }, "node-1");
    assert.equal(err.message, 'leases.coordination.k8s.io "node-1" not found');
    assert.equal(err.status.code, 404);
    assert.deepStrictEqual(err.status.details, {
      group: "coordination.k8s.io",
      kind: "leases",
      name: "node-1",
    });
    assert.equal(isNotFound(err), true);
    assert.equal(isConflict(err), false);
  });

  await t.step("Conflict carries kubelet-visible text", () => {
    const err = newConflict({ resource: "pods" }, "web", "the object has been modified");
    assert.equal(
      err.message,
      'Operation cannot be fulfilled on pods "web": the object has been modified',
    );
    assert.equal(isConflict(err), true);
    assert.equal(isAlreadyExists(err), false);
  });
});

Deno.test("TestReasonForError: known reasons win, unknown ones fall back to the code", async (t) => {
  const cases: [string, StatusError, (e: unknown) => boolean][] = [
    [
      "410 Expired is Expired, not Gone",
      new StatusError({ code: 410, reason: "Expired" }),
      isResourceExpired,
    ],
    ["410 Gone", new StatusError({ code: 410, reason: "Gone" }), isGone],
    ["403 without reason", new StatusError({ code: 403 }), isForbidden],
    ["404 with an unknown reason", new StatusError({ code: 404, reason: "Strange" }), isNotFound],
    ["429", new StatusError({ code: 429, reason: "TooManyRequests" }), isTooManyRequests],
  ];
  for (const [name, err, predicate] of cases) {
    await t.step(name, () => assert.equal(predicate(err), true));
  }
  await t.step("a known reason with a different code is classified by the reason", () => {
    const err = new StatusError({ code: 500, reason: "NotFound" });
    assert.equal(isNotFound(err), true);
    assert.equal(isGone(new StatusError({ code: 410, reason: "Expired" })), false);
  });
  await t.step("errors wrapped as a cause are found; plain errors have no reason", () => {
    const wrapped = new Error("outer", { cause: newNotFound({ resource: "pods" }, "x") });
    assert.equal(isNotFound(wrapped), true);
    assert.equal(reasonForError(new Error("plain")), "");
    assert.equal(isNotFound(new Error("plain")), false);
  });
  await t.step("retryAfterSeconds is the client delay", () => {
    const err = new StatusError({ code: 429, details: { retryAfterSeconds: 3 } });
    assert.equal(suggestsClientDelay(err), 3);
  });
});
