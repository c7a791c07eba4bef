/**
 * `$(VAR)` expansion: `$(NAME)` is replaced through a mapping, `$$` escapes a `$`, anything else
 * is kept as written.
 * Mirrors kubernetes' third_party/forked/golang/expansion/expand.go (Expand, MappingFuncFor).
 * Go scans bytes and this scans UTF-16 code units: for ASCII syntax the result is the same; a `$`
 * before a non-ASCII character is kept with it here (Go would split the character's bytes).
 * @module
 */

const operator = "$";
const referenceOpener = "(";
const referenceCloser = ")";

// `NAME` → `$(NAME)`: what an unresolved reference expands to.
function syntaxWrap(input: string): string {
  return `${operator}${referenceOpener}${input}${referenceCloser}`;
}

/**
 * A mapping that looks a name up in each context in turn and leaves an unknown one as `$(NAME)`.
 *
 * @example
 * ```ts
 * mappingFuncFor(new Map([["A", "1"]]), new Map([["B", "2"]]))("B"); // "2"
 * mappingFuncFor(new Map([["A", "1"]]))("C"); // "$(C)"
 * ```
 */
export function mappingFuncFor(
  ...context: ReadonlyMap<string, string>[]
): (name: string) => string {
  return (name) => {
    for (const vars of context) {
      const value = vars.get(name);
      if (value !== undefined) return value;
    }
    return syntaxWrap(name);
  };
}

/**
 * Expands `$(VAR)` in `input` through `mapping`; `$$` becomes `$`; a `$` followed by anything
 * else, or an unterminated `$(`, is kept verbatim.
 *
 * @example
 * ```ts
 * expand("echo $(A) $$(A) $(", (name) => name === "A" ? "x" : `$(${name})`); // "echo x $(A) $("
 * ```
 */
export function expand(input: string, mapping: (name: string) => string): string {
  let out = "";
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== operator || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const { read, isVar, advance } = tryReadVariableName(input.slice(cursor + 1));
    out += isVar ? mapping(read) : read;
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

function tryReadVariableName(input: string): { read: string; isVar: boolean; advance: number } {
  switch (input[0]) {
    case operator:
      return { read: operator, isVar: false, advance: 1 };
    case referenceOpener:
      for (let i = 1; i < input.length; i++) {
        if (input[i] === referenceCloser) {
          return { read: input.slice(1, i), isVar: true, advance: i + 1 };
        }
      }
      // An incomplete reference: keep "$(" and carry on after it.
      return { read: operator + referenceOpener, isVar: false, advance: 1 };
    default:
      return { read: operator + input[0], isVar: false, advance: 1 };
  }
}
