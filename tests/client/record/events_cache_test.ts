/**
 * Port of client-go tools/record/events_cache_test.go: TestEventAggregatorByReasonFunc,
 * TestEventAggregatorByReasonMessageFunc, TestEventCorrelator, TestEventSpamFilter. Go's
 * `clock.IntervalClock` (each `Now()` moves time on by a fixed step) is `IntervalClock` here.
 * @module
 */
import assert from "node:assert/strict";
import type { Event, ObjectReference } from "../../../src/api/core/v1/mod.ts";
import type { Clock, ClockTimer } from "../../../src/util/clock.ts";
import {
  defaultAggregateIntervalInSeconds,
  defaultAggregateMaxEvents,
  defaultSpamBurst,
  eventAggregatorByReasonFunc,
  eventAggregatorByReasonMessageFunc,
  EventCorrelator,
  LruCache,
} from "../../../src/client/record/events_cache.ts";

/** Every `now()` returns the time and then moves it on by `intervalMs` (Go's IntervalClock). */
class IntervalClock implements Clock {
  #t: number;
  readonly #intervalMs: number;
  constructor(start: number, intervalMs: number) {
    this.#t = start;
    this.#intervalMs = intervalMs;
  }
  now(): number {
    const t = this.#t;
    this.#t += this.#intervalMs;
    return t;
  }
  since(start: number): number {
    return this.now() - start;
  }
  afterFunc(): ClockTimer {
    throw new Error("IntervalClock has no timers");
  }
  sleep(): Promise<void> {
    throw new Error("IntervalClock has no timers");
  }
}

function makeObjectReference(kind: string, name: string, namespace: string): ObjectReference {
  return {
    kind,
    name,
    namespace,
    uid: "C934D34AFB20242",
    apiVersion: "version",
    fieldPath: "spec.containers{mycontainer}",
  };
}

function makeEvent(reason: string, message: string, involvedObject: ObjectReference): Event {
  const t = "2026-11-23T05:00:00Z";
  return {
    metadata: {},
    reason,
    message,
    involvedObject,
    source: { component: "kubelet", host: "kublet.node1" },
    count: 1,
    firstTimestamp: t,
    lastTimestamp: t,
    type: "Normal",
  };
}

const makeEvents = (n: number, template: Event) =>
  Array.from({ length: n }, () => structuredClone(template));

function makeUniqueEvents(n: number): Event[] {
  return Array.from(
    { length: n },
    (_, i) =>
      makeEvent(`reason-${i}`, `message-${i}`, makeObjectReference("Pod", `pod-${i}`, `ns-${i}`)),
  );
}

function makeSimilarEvents(n: number, template: Event, messagePrefix: string): Event[] {
  return makeEvents(n, template).map((e, i) => ({
    ...e,
    message: [messagePrefix, String(i), e.message].join("-"),
  }));
}

const setCount = (e: Event, count: number): Event => ({ ...structuredClone(e), count });

/** Go's validateEvent: timestamps set and equal iff count is 1, name prefix, the rest equal. */
function validateEvent(actual: Event, expected: Event): void {
  assert.ok(actual.firstTimestamp && actual.lastTimestamp, "timestamps set");
  if (actual.firstTimestamp === actual.lastTimestamp) {
    assert.ok(!((expected.count ?? 0) > 1), "compression must show in different timestamps");
  } else {
    assert.ok(expected.count !== 1, "a single occurrence has equal timestamps");
  }
  const name = actual.metadata.name ?? "";
  assert.ok(name.startsWith(expected.metadata.name ?? ""), `name ${name}`);
  const comparable = (e: Event) => ({
    ...e,
    metadata: { ...e.metadata, name: undefined, resourceVersion: undefined, namespace: undefined },
    firstTimestamp: undefined,
    lastTimestamp: undefined,
  });
  assert.deepStrictEqual(comparable(actual), comparable(expected));
}

Deno.test("TestEventAggregatorByReasonFunc", () => {
  const event1 = makeEvent(
    "end-of-world",
    "it was fun",
    makeObjectReference("Pod", "pod1", "other"),
  );
  const event2 = makeEvent(
    "end-of-world",
    "it was awful",
    makeObjectReference("Pod", "pod1", "other"),
  );
  const event3 = makeEvent(
    "nevermind",
    "it was a bug",
    makeObjectReference("Pod", "pod1", "other"),
  );
  const [aggKey1, localKey1] = eventAggregatorByReasonFunc(event1);
  const [aggKey2, localKey2] = eventAggregatorByReasonFunc(event2);
  const [aggKey3] = eventAggregatorByReasonFunc(event3);
  assert.equal(aggKey1, aggKey2);
  assert.notEqual(localKey1, localKey2);
  assert.notEqual(aggKey1, aggKey3);
});

Deno.test("TestEventAggregatorByReasonMessageFunc", () => {
  const event1 = makeEvent(
    "end-of-world",
    "it was fun",
    makeObjectReference("Pod", "pod1", "other"),
  );
  assert.ok(
    eventAggregatorByReasonMessageFunc(event1).startsWith("(combined from similar events): "),
  );
});

Deno.test("TestEventCorrelator", async (t) => {
  const firstEvent = makeEvent(
    "first",
    "i am first",
    makeObjectReference("Pod", "my-pod", "my-ns"),
  );
  const duplicateEvent = makeEvent(
    "duplicate",
    "me again",
    makeObjectReference("Pod", "my-pod", "my-ns"),
  );
  const uniqueEvent = makeEvent(
    "unique",
    "snowflake",
    makeObjectReference("Pod", "my-pod", "my-ns"),
  );
  const similarEvent = makeEvent(
    "similar",
    "similar message",
    makeObjectReference("Pod", "my-pod", "my-ns"),
  );
  similarEvent.involvedObject.fieldPath = "spec.containers{container1}";
  const aggregateEvent = makeEvent(
    similarEvent.reason!,
    eventAggregatorByReasonMessageFunc(similarEvent),
    similarEvent.involvedObject,
  );
  const similarButDifferentContainerEvent = structuredClone(similarEvent);
  similarButDifferentContainerEvent.involvedObject.fieldPath = "spec.containers{container2}";

  const scenarios: Record<string, {
    previousEvents: Event[];
    newEvent: Event;
    expectedEvent?: Event;
    intervalSeconds: number;
    expectedSkip?: boolean;
  }> = {
    "create-a-single-event": {
      previousEvents: [],
      newEvent: firstEvent,
      expectedEvent: setCount(firstEvent, 1),
      intervalSeconds: 5,
    },
    "the-same-event-should-just-count": {
      previousEvents: makeEvents(1, duplicateEvent),
      newEvent: duplicateEvent,
      expectedEvent: setCount(duplicateEvent, 2),
      intervalSeconds: 5,
    },
    "the-same-event-should-just-count-even-if-more-than-aggregate": {
      previousEvents: makeEvents(defaultAggregateMaxEvents, duplicateEvent),
      newEvent: duplicateEvent,
      expectedEvent: setCount(duplicateEvent, defaultAggregateMaxEvents + 1),
      intervalSeconds: 30,
    },
    "the-same-event-is-spam-if-happens-too-frequently": {
      previousEvents: makeEvents(defaultSpamBurst + 1, duplicateEvent),
      newEvent: duplicateEvent,
      expectedSkip: true,
      intervalSeconds: 1,
    },
    "create-many-unique-events": {
      previousEvents: makeUniqueEvents(30),
      newEvent: uniqueEvent,
      expectedEvent: setCount(uniqueEvent, 1),
      intervalSeconds: 5,
    },
    "similar-events-should-aggregate-event": {
      previousEvents: makeSimilarEvents(
        defaultAggregateMaxEvents - 1,
        similarEvent,
        similarEvent.message!,
      ),
      newEvent: similarEvent,
      expectedEvent: setCount(aggregateEvent, 1),
      intervalSeconds: 5,
    },
    "similar-events-many-times-should-count-the-aggregate": {
      previousEvents: makeSimilarEvents(
        defaultAggregateMaxEvents,
        similarEvent,
        similarEvent.message!,
      ),
      newEvent: similarEvent,
      expectedEvent: setCount(aggregateEvent, 2),
      intervalSeconds: 5,
    },
    "events-from-different-containers-do-not-aggregate": {
      previousEvents: makeEvents(1, similarButDifferentContainerEvent),
      newEvent: similarEvent,
      expectedEvent: setCount(similarEvent, 1),
      intervalSeconds: 5,
    },
    "similar-events-whose-interval-is-greater-than-aggregate-interval-do-not-aggregate": {
      previousEvents: makeSimilarEvents(
        defaultAggregateMaxEvents - 1,
        similarEvent,
        similarEvent.message!,
      ),
      newEvent: similarEvent,
      expectedEvent: setCount(similarEvent, 1),
      intervalSeconds: defaultAggregateIntervalInSeconds,
    },
  };

  for (const [name, input] of Object.entries(scenarios)) {
    await t.step(name, () => {
      const clock = new IntervalClock(
        Date.parse("2026-11-23T05:00:00Z"),
        input.intervalSeconds * 1000,
      );
      const correlator = new EventCorrelator(clock);
      const stamp = (e: Event) => {
        const now = new Date(clock.now()).toISOString().replace(/\.\d+Z$/, "Z");
        return { ...structuredClone(e), firstTimestamp: now, lastTimestamp: now };
      };
      for (const previous of input.previousEvents) {
        const result = correlator.eventCorrelate(stamp(previous));
        if (!result.skip) correlator.updateState(result.event!);
      }
      const result = correlator.eventCorrelate(stamp(input.newEvent));
      assert.equal(result.skip, input.expectedSkip ?? false);
      if (result.skip) return;
      validateEvent(result.event!, input.expectedEvent!);
    });
  }
});

Deno.test("TestEventSpamFilter", async (t) => {
  const spamKeyFuncBasedOnObjectsAndReason = (e: Event) =>
    [
      e.source?.component,
      e.source?.host,
      e.involvedObject.kind,
      e.involvedObject.namespace,
      e.involvedObject.name,
      e.involvedObject.uid,
      e.involvedObject.apiVersion,
      e.reason,
    ].join("");
  const originalEvent = makeEvent(
    "original",
    "i am first",
    makeObjectReference("Pod", "my-pod", "my-ns"),
  );
  const differentReasonEvent = makeEvent(
    "duplicate",
    "me again",
    makeObjectReference("Pod", "my-pod", "my-ns"),
  );
  const spamEvent = makeEvent(
    "original",
    "me again",
    makeObjectReference("Pod", "my-pod", "my-ns"),
  );
  const cases: Record<string, {
    newEvent: Event;
    expectedEvent?: Event;
    expectedSkip: boolean;
    spamKeyFunc?: (e: Event) => string;
  }> = {
    "event should be reported as spam if object reference is the same for default spam filter": {
      newEvent: differentReasonEvent,
      expectedSkip: true,
    },
    "event should not be reported as spam if object reference is the same, but reason is different for custom spam filter":
      {
        newEvent: differentReasonEvent,
        expectedEvent: differentReasonEvent,
        expectedSkip: false,
        spamKeyFunc: spamKeyFuncBasedOnObjectsAndReason,
      },
    "event should  be reported as spam if object reference and reason is the same, but message is different for custom spam filter":
      {
        newEvent: spamEvent,
        expectedSkip: true,
        spamKeyFunc: spamKeyFuncBasedOnObjectsAndReason,
      },
  };
  for (const [name, input] of Object.entries(cases)) {
    await t.step(name, () => {
      const correlator = new EventCorrelator(new IntervalClock(0, 1000), {
        spamKeyFunc: input.spamKeyFunc,
        burstSize: 1,
      });
      const first = correlator.eventCorrelate(structuredClone(originalEvent));
      if (!first.skip) correlator.updateState(first.event!);
      const result = correlator.eventCorrelate(structuredClone(input.newEvent));
      assert.equal(result.skip, input.expectedSkip);
      if (!result.skip) validateEvent(result.event!, input.expectedEvent!);
    });
  }
});

Deno.test("TestEventSpamFilter: Normal and Warning events of one object have separate budgets", async (t) => {
  // client-go v0.36's getSpamKey includes the event type: a pod's 25 Normal events do not use up
  // the budget of its Warnings, and the other way round. No time passes, so nothing refills.
  const pod = makeObjectReference("Pod", "my-pod", "my-ns");
  const event = (type: string, i: number) => ({
    ...makeEvent(`reason-${i}`, `message-${i}`, pod),
    type,
  });
  const correlator = new EventCorrelator(new IntervalClock(0, 0));
  const send = (e: Event) => {
    const result = correlator.eventCorrelate(e);
    if (!result.skip) correlator.updateState(result.event!);
    return result.skip;
  };
  await t.step(`${defaultSpamBurst} Normal events pass, the next is dropped`, () => {
    for (let i = 0; i < defaultSpamBurst; i++) assert.equal(send(event("Normal", i)), false);
    assert.equal(send(event("Normal", defaultSpamBurst)), true);
  });
  await t.step(`${defaultSpamBurst} Warning events still pass, the next is dropped`, () => {
    for (let i = 0; i < defaultSpamBurst; i++) assert.equal(send(event("Warning", i)), false);
    assert.equal(send(event("Warning", defaultSpamBurst)), true);
  });
});

Deno.test("LruCache: get refreshes, add evicts the least recently used", () => {
  const lru = new LruCache<number>(2);
  lru.add("a", 1);
  lru.add("b", 2);
  lru.get("a");
  lru.add("c", 3);
  assert.equal(lru.get("b"), undefined);
  assert.equal(lru.get("a"), 1);
  assert.equal(lru.size, 2);
});
