/**
 * Tests for the bounded channel that stands in for kubelet's buffered Go channels (the results
 * manager's updates channel has capacity 20).
 * @module
 */
import assert from "node:assert/strict";
import { Channel } from "../../src/util/channel.ts";
import { settle } from "../../src/util/clock.ts";

// Collects everything an iteration yields until the channel closes.
async function drain<T>(ch: Channel<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const v of ch) out.push(v);
  return out;
}

Deno.test("TestChannel", async (t) => {
  await t.step("values come out in the order they went in", async () => {
    const ch = new Channel<number>(20);
    for (let i = 0; i < 20; i++) await ch.send(i);
    ch.close();
    assert.deepEqual(await drain(ch), Array.from({ length: 20 }, (_, i) => i));
  });

  await t.step("send waits while the buffer is full (backpressure)", async () => {
    const ch = new Channel<number>(20);
    for (let i = 0; i < 20; i++) await ch.send(i);
    assert.equal(ch.length, 20);

    let sent = false;
    const blocked = ch.send(20).then(() => sent = true);
    await settle();
    assert.equal(sent, false);
    assert.equal(ch.blockedSenders, 1);

    assert.deepEqual(await ch.receive(), { done: false, value: 0 });
    await blocked;
    assert.equal(sent, true);
    assert.equal(ch.length, 20);
    assert.equal(ch.blockedSenders, 0);

    // The blocked value joined the end of the queue, after the ones already buffered.
    ch.close();
    const rest = await drain(ch);
    assert.deepEqual(rest, Array.from({ length: 20 }, (_, i) => i + 1));
  });

  await t.step("trySend is false when full and true once there is room", async () => {
    const ch = new Channel<string>(2);
    assert.equal(ch.trySend("a"), true);
    assert.equal(ch.trySend("b"), true);
    assert.equal(ch.trySend("c"), false);
    assert.equal(ch.length, 2);
    await ch.receive();
    assert.equal(ch.trySend("c"), true);
    ch.close();
    assert.deepEqual(await drain(ch), ["b", "c"]);
  });

  await t.step("a waiting receiver gets the next send directly", async () => {
    const ch = new Channel<number>(1);
    const waiting = ch.receive();
    await ch.send(7);
    assert.deepEqual(await waiting, { done: false, value: 7 });
    assert.equal(ch.length, 0);
  });

  await t.step("tryReceive returns nothing when empty", async () => {
    const ch = new Channel<number>(1);
    assert.equal(ch.tryReceive(), undefined);
    await ch.send(1);
    assert.deepEqual(ch.tryReceive(), { done: false, value: 1 });
  });

  await t.step("an unbuffered channel hands over only to a receiver", async () => {
    const ch = new Channel<number>(0);
    assert.equal(ch.trySend(1), false);
    const sending = ch.send(2);
    assert.equal(ch.blockedSenders, 1);
    assert.deepEqual(await ch.receive(), { done: false, value: 2 });
    await sending;
  });

  await t.step("close ends iteration after the buffered values", async () => {
    const ch = new Channel<number>(5);
    await ch.send(1);
    await ch.send(2);
    const consumer = drain(ch);
    await ch.send(3);
    ch.close();
    assert.deepEqual(await consumer, [1, 2, 3]);
    assert.deepEqual(await ch.receive(), { done: true, value: undefined });
  });

  await t.step("close ends a receiver that is waiting", async () => {
    const ch = new Channel<number>(1);
    const waiting = ch.receive();
    ch.close();
    assert.deepEqual(await waiting, { done: true, value: undefined });
  });

  await t.step("close rejects blocked senders and later sends", async () => {
    const ch = new Channel<number>(1);
    await ch.send(1);
    const blocked = ch.send(2);
    ch.close();
    await assert.rejects(blocked, { message: "send on closed channel" });
    await assert.rejects(ch.send(3), { message: "send on closed channel" });
    assert.equal(ch.trySend(4), false);
    assert.equal(ch.closed, true);
    // The value buffered before close is still delivered; the rejected ones are not.
    assert.deepEqual(await drain(ch), [1]);
  });

  await t.step("capacity must be a non-negative integer", () => {
    assert.throws(() => new Channel(-1), RangeError);
    assert.throws(() => new Channel(1.5), RangeError);
  });
});
