/**
 * A reader for the plain block-style YAML that kubeconfig files are written in (by kubectl, kind,
 * kubeadm and our scripts): block mappings and sequences, plain and quoted one-line scalars, `{}`,
 * `[]`, comments. Anything else — anchors, tags, flow collections with content, block scalars,
 * multi-line scalars, numbers, dates, YAML 1.1's many booleans, tabs, non-ASCII text — returns
 * `undefined`, and the caller parses the text with npm `yaml` instead.
 *
 * Why: loading the `yaml` package costs the agent about 6 MiB resident for good (its code and
 * Deno's npm and CommonJS machinery), and an agent in API-server mode would load it only to read
 * its kubeconfig. What this reader accepts it reads exactly as `yaml` does with
 * `{ version: "1.1" }` (tests/util/block_yaml_test.ts checks that on mutated inputs).
 * @module
 */

/** A document {@link parseBlockYaml} could read. */
export interface BlockYamlDocument {
  /** The document's value: objects, arrays, strings, `true`, `false` and `null`. */
  value: unknown;
}

/**
 * Reads `text` when it is one document in the block subset described in the module's
 * documentation; `undefined` otherwise (including for text that is not valid YAML at all).
 *
 * @example
 * ```ts
 * const doc = parseBlockYaml("clusters:\n- name: c\n  cluster: {}\n");
 * doc?.value; // { clusters: [{ name: "c", cluster: {} }] }
 * parseBlockYaml("replicas: 3"); // undefined: numbers are left to the full parser
 * ```
 */
export function parseBlockYaml(text: string): BlockYamlDocument | undefined {
  const lines = splitLines(text);
  if (lines === undefined || lines.length === 0) return undefined;
  try {
    const reader = new BlockReader(lines);
    return { value: reader.document() };
  } catch (err) {
    if (err === outsideSubset) return undefined;
    throw err;
  }
}

/** Thrown (and caught in {@link parseBlockYaml}) when the text leaves the subset. */
const outsideSubset = Symbol("outside the block YAML subset");

/** Deeper nesting than any kubeconfig has is left to the full parser. */
const maxDepth = 64;

/** A line with content: its indentation and its text after it, trailing spaces removed. */
interface Line {
  indent: number;
  text: string;
}

/** Plain keys this reader accepts; quoted, numeric and complex keys go to the full parser. */
const keyPattern = /^([A-Za-z_][A-Za-z0-9_./-]*):(?: (.*))?$/;

/**
 * Letter-led words YAML 1.1 gives a type (booleans, null), in any case; of them only the values
 * `true`, `false` and `null` are read here. (`~`, `=` and `<<` start with an indicator.)
 */
const typedWords = new Set(["y", "n", "yes", "no", "on", "off", "true", "false", "null"]);

/** Characters that start something other than a plain string scalar. */
const indicators = new Set([..."-?:,[]{}#&*!|>'\"%@`<="]);

/** Drops blank and comment lines; `undefined` for anything the reader does not take apart. */
function splitLines(text: string): Line[] | undefined {
  if (/\r(?!\n)/.test(text)) return undefined; // a lone CR: `yaml` does not end a line there
  const lines: Line[] = [];
  let documentStart = false;
  for (let raw of text.split("\n")) {
    if (raw.endsWith("\r")) raw = raw.slice(0, -1);
    // Tabs, control characters, a byte-order mark and Unicode line breaks: the full parser.
    if (/[^\x20-\x7e]/.test(raw)) return undefined;
    const content = raw.trimStart();
    if (content === "" || content.startsWith("#")) continue;
    const indent = raw.length - content.length;
    if (indent === 0 && /^(---|\.\.\.|%)/.test(content)) {
      // One `---` before any content opens the document; directives and more documents do not.
      if (content !== "---" || documentStart || lines.length > 0) return undefined;
      documentStart = true;
      continue;
    }
    lines.push({ indent, text: content.trimEnd() });
  }
  return lines;
}

function isSequenceEntry(text: string): boolean {
  return text === "-" || text.startsWith("- ");
}

/** Recursive descent over the lines; throws {@link outsideSubset} to give up. */
class BlockReader {
  #lines: Line[];
  #next = 0;
  #depth = 0;

  constructor(lines: Line[]) {
    this.#lines = lines;
  }

  document(): unknown {
    const value = this.#node(this.#lines[0].indent);
    if (this.#next < this.#lines.length) throw outsideSubset;
    return value;
  }

  /** The block collection whose first line is the next one, at `indent`. */
  #node(indent: number): unknown {
    if (++this.#depth > maxDepth) throw outsideSubset;
    const line = this.#lines[this.#next];
    const value = isSequenceEntry(line.text) ? this.#sequence(indent) : this.#mapping(indent);
    this.#depth--;
    return value;
  }

  #mapping(indent: number): Record<string, unknown> {
    const mapping: Record<string, unknown> = {};
    while (this.#next < this.#lines.length) {
      const line = this.#lines[this.#next];
      if (line.indent < indent) break;
      if (line.indent > indent) throw outsideSubset; // a multi-line scalar, or not YAML
      const match = keyPattern.exec(line.text);
      if (!match) throw outsideSubset;
      const key = match[1];
      if (!plainString(key) || key === "__proto__") throw outsideSubset;
      if (Object.hasOwn(mapping, key)) throw outsideSubset; // `yaml` refuses duplicate keys
      this.#next++;
      mapping[key] = this.#value((match[2] ?? "").trim(), indent, true);
    }
    return mapping;
  }

  #sequence(indent: number): unknown[] {
    const sequence: unknown[] = [];
    while (this.#next < this.#lines.length) {
      const line = this.#lines[this.#next];
      if (line.indent < indent) break;
      if (line.indent > indent) throw outsideSubset;
      // A mapping key at the sequence's own indentation ends a sequence nested under a key.
      if (!isSequenceEntry(line.text)) break;
      const rest = line.text.slice(1);
      const content = rest.trimStart();
      if (content === "" || content.startsWith("#")) {
        this.#next++;
        sequence.push(this.#value("", indent, false));
        continue;
      }
      // `- key: value` and `- - item` open a collection at the column of their content: read
      // the rest of the line as a line of its own there.
      const column = indent + 1 + (rest.length - content.length);
      if (keyPattern.test(content) || isSequenceEntry(content)) {
        this.#lines[this.#next] = { indent: column, text: content };
        sequence.push(this.#node(column));
      } else {
        this.#next++;
        sequence.push(scalar(content));
      }
    }
    return sequence;
  }

  /**
   * The value after `key:` or `-` on a line at `indent`: a scalar on the same line, else the
   * collection on the lines below (a sequence under a mapping key may sit at the key's own
   * indentation), else null.
   */
  #value(text: string, indent: number, mappingValue: boolean): unknown {
    if (text !== "" && !text.startsWith("#")) return scalar(text);
    const below = this.#lines[this.#next];
    if (below === undefined) return null;
    if (below.indent > indent) return this.#node(below.indent);
    if (mappingValue && below.indent === indent && isSequenceEntry(below.text)) {
      return this.#node(indent);
    }
    return null;
  }
}

/** A one-line scalar: `{}`, `[]`, a quoted string, or a plain string, `true`, `false` or null. */
function scalar(text: string): unknown {
  const first = text[0];
  if (first === "{" || first === "[") {
    const match = /^(\{\}|\[\])( +#.*)?$/.exec(text);
    if (!match) throw outsideSubset;
    return match[1] === "{}" ? {} : [];
  }
  if (first === "'") return singleQuoted(text);
  if (first === '"') return doubleQuoted(text);
  if (indicators.has(first)) throw outsideSubset;
  const comment = text.search(/ #/);
  const value = comment < 0 ? text : text.slice(0, comment).trimEnd();
  // `a: b` inside a value is an error in YAML; a trailing `:` makes it a key.
  if (value.includes(": ") || value.endsWith(":")) throw outsideSubset;
  if (value === "true") return true;
  if (value === "false") return false;
  if (value === "null" || value === "~") return null;
  if (!plainString(value)) throw outsideSubset;
  return value;
}

/**
 * Whether YAML 1.1 (as `yaml` implements it) resolves the plain scalar `text` to a string: not one
 * of its booleans, nulls or merge key, and nothing a number or a date could match — those start
 * with a sign, a digit or a dot (relative paths aside), or are an exponent alone (`e1`).
 */
function plainString(text: string): boolean {
  if (typedWords.has(text.toLowerCase())) return false;
  if (/^[-+0-9]/.test(text) || /^[eE][-+]?[0-9]+$/.test(text)) return false;
  return !text.startsWith(".") || text.startsWith("./") || text.startsWith("../");
}

/** Only spaces and a comment may follow a closing quote. */
function endOfQuoted(text: string, after: number): void {
  if (!/^( +#.*)?$/.test(text.slice(after))) throw outsideSubset;
}

function singleQuoted(text: string): string {
  let value = "";
  let at = 1;
  for (;;) {
    const quote = text.indexOf("'", at);
    if (quote < 0) throw outsideSubset; // continues on the next line
    value += text.slice(at, quote);
    if (text[quote + 1] !== "'") {
      endOfQuoted(text, quote + 1);
      return value;
    }
    value += "'";
    at = quote + 2;
  }
}

/** The escapes read here; `\x`, `\u` and the rest go to the full parser. */
const escapes: Record<string, string> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  n: "\n",
  t: "\t",
  r: "\r",
};

function doubleQuoted(text: string): string {
  let value = "";
  for (let at = 1; at < text.length; at++) {
    const c = text[at];
    if (c === '"') {
      endOfQuoted(text, at + 1);
      return value;
    }
    if (c === "\\") {
      const escaped = escapes[text[at + 1]];
      if (escaped === undefined) throw outsideSubset;
      value += escaped;
      at++;
      continue;
    }
    value += c;
  }
  throw outsideSubset; // continues on the next line
}
