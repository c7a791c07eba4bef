/**
 * The worker that parses manifest files, so that a large file never holds up probes and syncs on
 * the agent's main thread (a 3 MiB manifest takes seconds to parse). Receives
 * {@link DecodeRequest}s and answers each with a {@link DecodeResponse}.
 * @module
 */
/// <reference lib="deno.worker" />
import { decodePodDocuments } from "./common.ts";
import type { DecodeRequest, DecodeResponse } from "./decoder.ts";
import { errorText } from "../../util/errors.ts";

self.onmessage = async (e: MessageEvent<DecodeRequest>) => {
  const { id, bytes, source, nodeName } = e.data;
  let response: DecodeResponse;
  try {
    const text = new TextDecoder().decode(bytes);
    response = { id, documents: await decodePodDocuments(text, { source, nodeName }) };
  } catch (err) {
    response = { id, error: errorText(err) };
  }
  self.postMessage(response);
};
