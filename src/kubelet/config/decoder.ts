/**
 * Where manifest text is parsed: {@link WorkerDecoder} parses in a Web Worker, off the thread
 * that runs probes and pod syncs; {@link inlineDecoder} parses in place (one-shot commands, tests).
 * @module
 */
import { type DecodedDocument, decodePodDocuments } from "./common.ts";

/** Parses one manifest file's bytes into documents. */
export interface ManifestDecoder {
  /** Decodes `bytes` (UTF-8) as the manifest `source` on node `nodeName`. */
  decode(
    bytes: Uint8Array,
    options: { source: string; nodeName: string },
  ): Promise<DecodedDocument[]>;
  /** Releases the decoder's resources (the worker); later calls start a new one. */
  close(): void;
}

/** A request to the decode worker. */
export interface DecodeRequest {
  id: number;
  bytes: Uint8Array;
  source: string;
  nodeName: string;
}

/** The worker's answer: the documents, or why decoding failed. */
export type DecodeResponse =
  | { id: number; documents: DecodedDocument[]; error?: undefined }
  | { id: number; error: string; documents?: undefined };

/**
 * Decodes on the calling thread.
 *
 * @example
 * ```ts
 * declare const text: string;
 *
 * const docs = await inlineDecoder.decode(new TextEncoder().encode(text), { source: "web.yaml", nodeName: "n" });
 * ```
 */
export const inlineDecoder: ManifestDecoder = {
  decode: (bytes, options) => decodePodDocuments(new TextDecoder().decode(bytes), options),
  close: () => {},
};

/**
 * Decodes in one long-lived Web Worker (started on first use). A worker that dies (a crash, or
 * memory exhausted by a hostile file) fails the requests in flight, and the next request starts a
 * fresh one.
 *
 * @example
 * ```ts
 * declare const bytes: Uint8Array;
 *
 * const decoder = new WorkerDecoder();
 * const docs = await decoder.decode(bytes, { source: "web.yaml", nodeName: "n" });
 * decoder.close();
 * ```
 */
export class WorkerDecoder implements ManifestDecoder {
  #worker: Worker | undefined;
  #nextId = 1;
  #pending = new Map<
    number,
    { resolve: (docs: DecodedDocument[]) => void; reject: (e: Error) => void }
  >();

  /** Sends `bytes` to the worker (transferring them) and resolves with its documents. */
  decode(
    bytes: Uint8Array,
    options: { source: string; nodeName: string },
  ): Promise<DecodedDocument[]> {
    const worker = this.#start();
    const id = this.#nextId++;
    const { promise, resolve, reject } = Promise.withResolvers<DecodedDocument[]>();
    this.#pending.set(id, { resolve, reject });
    const request: DecodeRequest = { id, bytes, ...options };
    const buffer = bytes.buffer;
    const transferable = buffer instanceof ArrayBuffer && bytes.byteLength === buffer.byteLength;
    worker.postMessage(request, transferable ? [buffer] : []);
    return promise;
  }

  /** Terminates the worker; requests in flight fail. */
  close(): void {
    this.#fail(new Error("manifest decoder closed"));
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL("./decode_worker.ts", import.meta.url), { type: "module" });
    worker.onmessage = (e: MessageEvent<DecodeResponse>) => {
      const waiter = this.#pending.get(e.data.id);
      if (!waiter) return;
      this.#pending.delete(e.data.id);
      if (e.data.error !== undefined) waiter.reject(new Error(e.data.error));
      else waiter.resolve(e.data.documents);
    };
    worker.onerror = (e) => {
      e.preventDefault();
      this.#fail(new Error(`manifest decoder failed: ${e.message}`));
    };
    this.#worker = worker;
    return worker;
  }

  #fail(error: Error): void {
    this.#worker?.terminate();
    this.#worker = undefined;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const waiter of pending) waiter.reject(error);
  }
}
