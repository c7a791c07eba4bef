/**
 * The pieces of remotecommand that need no connection: the window sizes read from the resize
 * stream (Go's json.Decoder over it), the statuses written to the error stream, and how many
 * streams each protocol waits for. After cri-streaming's remotecommand httpstream_test.go.
 * @module
 */
import assert from "node:assert/strict";
import {
  CodeExitError,
  expectedStreams,
  resizeEvents,
  statusFor,
  streamProtocolV2Name,
  streamProtocolV4Name,
} from "../../src/cri_streaming/remotecommand.ts";
import type { SpdyStream } from "../../src/cri_streaming/spdy/connection.ts";

function streamOf(chunks: string[]): SpdyStream {
  const queue = chunks.map((c) => new TextEncoder().encode(c));
  return { read: () => Promise.resolve(queue.shift() ?? null) } as unknown as SpdyStream;
}

async function sizes(chunks: string[]) {
  const out = [];
  for await (const s of resizeEvents(streamOf(chunks))) out.push(s);
  return out;
}

Deno.test("TestResizeEvents", async (t) => {
  await t.step("objects split across frames and back to back", async () => {
    assert.deepEqual(await sizes(['{"Width":80,', '"Height":24}{"Width":100,"Height":40}']), [
      { width: 80, height: 24 },
      { width: 100, height: 40 },
    ]);
  });
  await t.step("field names in any case, unknown fields ignored", async () => {
    assert.deepEqual(await sizes(['{"width":1,"HEIGHT":2,"x":"}"}\n']), [{ width: 1, height: 2 }]);
  });
  await t.step("a malformed value ends the events", async () => {
    assert.deepEqual(await sizes(['{"Width":5,"Height":6} [1] {"Width":7,"Height":8}']), [
      { width: 5, height: 6 },
    ]);
  });
});

Deno.test("TestStatusFor", async (t) => {
  await t.step(
    "success",
    () => assert.deepEqual(statusFor(undefined, "exec"), { status: "Success" }),
  );
  await t.step("a non-zero exit carries its code", () => {
    assert.deepEqual(
      statusFor(new CodeExitError(2, "error executing command [false], exit code 2"), "exec"),
      {
        status: "Failure",
        reason: "NonZeroExitCode",
        details: { causes: [{ reason: "ExitCode", message: "2" }] },
        message:
          "command terminated with non-zero exit code: error executing command [false], exit code 2",
      },
    );
  });
  await t.step("anything else is an internal error", () => {
    assert.deepEqual(statusFor(new Error("boom"), "attach"), {
      status: "Failure",
      message: "Internal error occurred: error attaching to container: boom",
      reason: "InternalError",
      code: 500,
    });
  });
});

Deno.test("TestExpectedStreams", () => {
  const all = { stdin: true, stdout: true, stderr: false, tty: true };
  assert.equal(expectedStreams(all, streamProtocolV4Name), 4); // error, stdin, stdout, resize
  assert.equal(expectedStreams(all, streamProtocolV2Name), 3); // no resize before v3
  assert.equal(expectedStreams({ ...all, stdin: false, tty: false }, streamProtocolV4Name), 2);
});
