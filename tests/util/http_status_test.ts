/** Go's http.StatusText, where Node's STATUS_CODES differs. */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { statusText } from "../../src/util/http_status.ts";

Deno.test("TestStatusText", async (t) => {
  for (
    const [code, text] of [
      [200, "OK"],
      [404, "Not Found"],
      [413, "Request Entity Too Large"],
      [414, "Request URI Too Long"],
      [416, "Requested Range Not Satisfiable"],
      [418, "I'm a teapot"],
      [422, "Unprocessable Entity"],
      [425, "Too Early"],
      [509, ""],
      [599, ""],
    ] as const
  ) await t.step(`${code}`, () => assertEquals(statusText(code), text));
});
