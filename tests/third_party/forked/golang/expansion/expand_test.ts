/**
 * Tests of `$(VAR)` expansion, ported from kubernetes'
 * third_party/forked/golang/expansion/expand_test.go (TestMapReference, TestMapping).
 * @module
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import {
  expand,
  mappingFuncFor,
} from "../../../../../src/third_party/forked/golang/expansion/expand.ts";

Deno.test("TestMapReference", async (t) => {
  // Each variable sees the ones declared before it, as makeEnvironmentVariables builds them.
  const envs = [
    ["FOO", "bar"],
    ["ZOO", "$(FOO)-1"],
    ["BLU", "$(ZOO)-2"],
  ];
  const declared = new Map<string, string>();
  const serviceEnv = new Map<string, string>();
  const mapping = mappingFuncFor(declared, serviceEnv);
  for (const [name, value] of envs) declared.set(name, expand(value, mapping));
  const want = new Map([["FOO", "bar"], ["ZOO", "bar-1"], ["BLU", "bar-1-2"]]);
  for (const [name, value] of want) {
    await t.step(name, () => assertEquals(declared.get(name), value));
  }
});

Deno.test("TestMapping", async (t) => {
  const context = new Map([
    ["VAR_A", "A"],
    ["VAR_B", "B"],
    ["VAR_C", "C"],
    ["VAR_REF", "$(VAR_A)"],
    ["VAR_EMPTY", ""],
  ]);
  const mapping = mappingFuncFor(context);
  const cases: [string, string, string][] = [
    ["whole string", "$(VAR_A)", "A"],
    ["repeat", "$(VAR_A)-$(VAR_A)", "A-A"],
    ["beginning", "$(VAR_A)-1", "A-1"],
    ["middle", "___$(VAR_B)___", "___B___"],
    ["end", "___$(VAR_C)", "___C"],
    ["compound", "$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"],
    ["escape & expansion", "$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"],
    ["compound escape", "$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"],
    ["mixed in escapes", "f000-$$VAR_A", "f000-$VAR_A"],
    ["backslash escape ignored", "foo\\$(VAR_C)bar", "foo\\Cbar"],
    ["backslash escape ignored (2)", "foo\\\\$(VAR_C)bar", "foo\\\\Cbar"],
    ["lots of backslashes", "foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar"],
    ["nested var references", "$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"],
    ["nested var references second type", "$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"],
    ["value is a reference", "$(VAR_REF)", "$(VAR_A)"],
    ["value is a reference x 2", "%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%"],
    ["empty var", "foo$(VAR_EMPTY)bar", "foobar"],
    ["unterminated expression", "foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"],
    ["expression without operator", "f00__(VAR_A)__", "f00__(VAR_A)__"],
    ["shell special vars pass through", "$?_boo_$!", "$?_boo_$!"],
    ["bare operators are ignored", "$VAR_A", "$VAR_A"],
    ["undefined vars are passed through", "$(VAR_DNE)", "$(VAR_DNE)"],
    ["multiple (even) operators, var undefined", "$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"],
    ["multiple (even) operators, var defined", "$$$$$$(VAR_A)", "$$$(VAR_A)"],
    ["multiple (odd) operators, var undefined", "$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"],
    ["multiple (odd) operators, var defined", "$$$$$$$(VAR_A)", "$$$A"],
    ["missing open expression", "$VAR_A)", "$VAR_A)"],
    ["shell syntax ignored", "${VAR_A}", "${VAR_A}"],
    ["trailing incomplete expression not consumed", "$(VAR_B)_______$(A", "B_______$(A"],
    ["trailing incomplete expression, no content", "$(VAR_C)_______$(", "C_______$("],
    ["operator at end of input string is preserved", "$(VAR_A)foobarzab$", "Afoobarzab$"],
    ["shell escaped incomplete expr", "foo-\\$(VAR_A", "foo-\\$(VAR_A"],
    ["lots of $( in middle", "--$($($($($--", "--$($($($($--"],
    ["lots of $( in beginning", "$($($($($--foo$(", "$($($($($--foo$("],
    ["lots of $( at end", "foo0--$($($($(", "foo0--$($($($("],
    ["escaped operators in variable names are not escaped", "$(foo$$var)", "$(foo$$var)"],
    ["newline not expanded", "\n", "\n"],
  ];
  for (const [name, input, expected] of cases) {
    await t.step(name, () => assertEquals(expand(input, mapping), expected));
  }
});

Deno.test("mappingFuncFor: the first context that has the name wins", () => {
  const mapping = mappingFuncFor(new Map([["A", "env"]]), new Map([["A", "svc"], ["B", "svc"]]));
  assertEquals(expand("$(A) $(B) $(C)", mapping), "env svc $(C)");
});
