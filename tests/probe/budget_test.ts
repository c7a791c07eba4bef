/**
 * Tests for the probe descriptor budget: slots, waiting on the injected clock, the failure text.
 * @module
 */
import assert from "node:assert/strict";
import { budgetCapacity, ProbeBudget } from "../../src/probe/budget.ts";
import type { ProbeOutcome } from "../../src/probe/probe.ts";
import { FakeClock } from "../../src/util/clock.ts";

// A probe that ends when told to and records the timeout it was given.
function heldProbe(): {
  run: (timeoutMs: number) => Promise<ProbeOutcome>;
  end: () => void;
  started: () => boolean;
  timeoutMs?: number;
} {
  let end!: () => void;
  let started = false;
  const probe = {
    run: (timeoutMs: number) => {
      started = true;
      probe.timeoutMs = timeoutMs;
      return new Promise<ProbeOutcome>((resolve) => {
        end = () => resolve({ result: "success", output: "" });
      });
    },
    end: () => end(),
    started: () => started,
    timeoutMs: undefined as number | undefined,
  };
  return probe;
}

Deno.test("TestProbeBudget", async (t) => {
  await t.step("runs at once while slots are free", async () => {
    const clock = new FakeClock(0);
    const budget = new ProbeBudget(2);
    const a = heldProbe();
    const running = budget.run({ timeoutMs: 1000, clock }, a.run);
    assert.equal(a.started(), true);
    assert.equal(a.timeoutMs, 1000);
    assert.equal(budget.inUse, 1);
    a.end();
    assert.deepEqual(await running, { result: "success", output: "" });
    assert.equal(budget.inUse, 0);
  });

  await t.step("a probe waits for a slot, then gets its whole timeout", async () => {
    const clock = new FakeClock(0);
    const budget = new ProbeBudget(1);
    const a = heldProbe();
    const b = heldProbe();
    const first = budget.run({ timeoutMs: 1000, clock }, a.run);
    const second = budget.run({ timeoutMs: 1000, clock }, b.run);
    await clock.step(300);
    assert.equal(b.started(), false);
    a.end();
    await first;
    await clock.step(0);
    assert.equal(b.started(), true);
    // Its texts quote the probe's timeout, as kubelet's do.
    assert.equal(b.timeoutMs, 1000);
    b.end();
    await second;
    assert.equal(budget.inUse, 0);
  });

  await t.step("a probe that cannot start before its timeout fails and says why", async () => {
    const clock = new FakeClock(0);
    const budget = new ProbeBudget(1, { openFileLimit: 256 });
    const a = heldProbe();
    const b = heldProbe();
    const first = budget.run({ timeoutMs: 5000, clock }, a.run);
    let done = false;
    const second = budget.run({ timeoutMs: 1000, clock }, b.run).finally(() => done = true);
    await clock.step(999);
    assert.equal(done, false);
    await clock.step(1);
    assert.deepEqual(await second, {
      result: "failure",
      output: "probe not started within 1s: all 1 probe slots were in use " +
        "(descriptor budget for an open-file limit of 256)",
    });
    assert.equal(b.started(), false);
    // The timed-out waiter gave up its place: the next release frees the slot.
    a.end();
    await first;
    assert.equal(budget.inUse, 0);
  });

  await t.step("waiters are served in order", async () => {
    const clock = new FakeClock(0);
    const budget = new ProbeBudget(1);
    const probes = [heldProbe(), heldProbe(), heldProbe()];
    const runs = probes.map((p) => budget.run({ timeoutMs: 0, clock }, p.run));
    assert.deepEqual(probes.map((p) => p.started()), [true, false, false]);
    probes[0].end();
    await runs[0];
    assert.deepEqual(probes.map((p) => p.started()), [true, true, false]);
    probes[1].end();
    await runs[1];
    assert.deepEqual(probes.map((p) => p.started()), [true, true, true]);
    probes[2].end();
    await runs[2];
  });
});

Deno.test("TestBudgetCapacity", () => {
  assert.equal(budgetCapacity(20000, 1), 9936);
  assert.equal(budgetCapacity(20000, 2), 4968);
  assert.equal(budgetCapacity(1024, 2), 224);
  assert.equal(budgetCapacity(100, 4), 8);
});
