/**
 * A bounded channel like a buffered Go channel: `send()` waits while the buffer is full
 * (backpressure), `trySend()` is Go's non-blocking `select { case ch <- v: default: }`, and one
 * consumer reads with `receive()` or `for await`.
 * @module
 */

/**
 * A bounded FIFO channel with backpressure.
 *
 * @example
 * ```ts
 * const ch = new Channel<number>(20);
 * await ch.send(1);
 * await ch.receive(); // 1
 * ```
 */
export class Channel<T> implements AsyncIterable<T> {
  readonly capacity: number;
  #buffer: T[] = [];
  #senders: { value: T; resolve: () => void; reject: (e: Error) => void }[] = [];
  #receivers: ((r: IteratorResult<T>) => void)[] = [];
  #closed = false;

  /** Creates a channel holding at most `capacity` values (0 = unbuffered). */
  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 0) {
      throw new RangeError(`channel capacity must be a non-negative integer, got ${capacity}`);
    }
    this.capacity = capacity;
  }

  /** Values waiting in the buffer. */
  get length(): number {
    return this.#buffer.length;
  }

  /** Senders blocked because the buffer is full. */
  get blockedSenders(): number {
    return this.#senders.length;
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Sends `value`, waiting while the buffer is full. Rejects if the channel is or becomes closed. */
  send(value: T): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("send on closed channel"));
    if (this.#deliver(value)) return Promise.resolve();
    return new Promise((resolve, reject) => this.#senders.push({ value, resolve, reject }));
  }

  /** Sends `value` only if that needs no waiting; returns whether it was sent. */
  trySend(value: T): boolean {
    if (this.#closed) return false;
    return this.#deliver(value);
  }

  /** Receives the next value; `undefined` with `done` once the channel is closed and drained. */
  receive(): Promise<IteratorResult<T>> {
    const value = this.#take();
    if (value) return Promise.resolve(value);
    if (this.#closed) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve) => this.#receivers.push(resolve));
  }

  /** Takes a value only if one is ready now (Go's `select` with a `default`). */
  tryReceive(): IteratorResult<T> | undefined {
    return this.#take();
  }

  /** Closes the channel: waiting receivers end, blocked senders are rejected, buffered values remain readable. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const r of this.#receivers.splice(0)) r({ done: true, value: undefined });
    for (const s of this.#senders.splice(0)) s.reject(new Error("send on closed channel"));
  }

  /** Iterates until the channel is closed and drained. */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      const next = await this.receive();
      if (next.done) return;
      yield next.value;
    }
  }

  #deliver(value: T): boolean {
    const receiver = this.#receivers.shift();
    if (receiver) {
      receiver({ done: false, value });
      return true;
    }
    if (this.#buffer.length < this.capacity) {
      this.#buffer.push(value);
      return true;
    }
    return false;
  }

  #take(): IteratorResult<T> | undefined {
    if (this.#buffer.length > 0) {
      const value = this.#buffer.shift()!;
      const sender = this.#senders.shift();
      if (sender) {
        this.#buffer.push(sender.value);
        sender.resolve();
      }
      return { done: false, value };
    }
    const sender = this.#senders.shift();
    if (sender) {
      sender.resolve();
      return { done: false, value: sender.value };
    }
    return undefined;
  }
}
