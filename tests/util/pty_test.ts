/**
 * Pseudo-terminals through libc: a child on the slave sees a terminal of the size set, its
 * controlling terminal is the slave, input typed on the master reaches it and the master reads
 * to EOF once it exits.
 * @module
 */
import assert from "node:assert/strict";
import { openPty, ptyCommand } from "../../src/util/pty.ts";

Deno.test("TestPty", async (t) => {
  const pty = openPty();
  assert.ok(pty, "libc should load with --allow-ffi");
  try {
    assert.match(pty.slavePath, /^\/dev\/pts\/\d+$/);
    pty.resize({ width: 100, height: 40 });
    const argv = ptyCommand(pty, [
      "sh",
      "-c",
      'read x; stty size; [ "$(tty)" = "$0" ] && echo ctty-ok; ps -o sid= -p $$; echo got:$x',
    ]);
    // The slave path goes last: it is the script's $0.
    const child = new Deno.Command(argv[0], {
      args: [...argv.slice(1), pty.slavePath],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    await pty.write(new TextEncoder().encode("hello\n"));
    let out = "";
    for (let c = await pty.read(); c !== null; c = await pty.read()) {
      out += new TextDecoder().decode(c);
    }
    const status = await child.status;
    await t.step("the size set before the start", () => assert.match(out, /\r\n40 100\r\n/));
    await t.step("the slave is the controlling terminal", () => assert.match(out, /ctty-ok/));
    await t.step("the child leads its own session", () => {
      assert.match(out, new RegExp(`\\s${child.pid}\\r\\n`));
    });
    await t.step("input echoed and read by the child", () => {
      assert.ok(out.startsWith("hello\r\n"), JSON.stringify(out));
      assert.match(out, /got:hello\r\n$/);
    });
    assert.equal(status.code, 0);
  } finally {
    pty.close();
  }
});
