/**
 * The block-YAML reader against npm `yaml` (YAML 1.1, as the kubeconfig loader parses): every
 * kubeconfig layout below is read, and read as `yaml` reads it; what it gives up on is listed; and
 * thousands of mutated kubeconfigs are either given up on or read exactly as `yaml` reads them.
 * @module
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { parseBlockYaml } from "../../src/util/block_yaml.ts";
import { Rng } from "../testing/differential/rng.ts";

const data = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=";

/** Kubeconfigs as the tools that write them lay them out. */
const kubeconfigs: Record<string, string> = {
  "scripts/kube-apiserver.sh": `apiVersion: v1
kind: Config
clusters:
- name: probelet-test
  cluster:
    server: https://127.0.0.1:16443
    certificate-authority-data: ${data}
users:
- name: system:node:probelet-node
  user:
    client-certificate-data: ${data}
    client-key-data: ${data}
contexts:
- name: node
  context:
    cluster: probelet-test
    user: system:node:probelet-node
current-context: node
`,
  "kubectl config view --raw": `apiVersion: v1
clusters:
- cluster:
    certificate-authority: /etc/kubernetes/pki/ca.crt
    server: https://[::1]:6443
    tls-server-name: kubernetes.default
  name: kind-kind
contexts:
- context:
    cluster: kind-kind
    namespace: kube-system
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    client-certificate: ../pki/kind.crt
    client-key: ../pki/kind.key
`,
  "quoted, commented, indented sequences": `---
# written by hand
apiVersion: "v1"   # quoted
kind: 'Config'
clusters:
  - name: "local"
    cluster:
      server: "https://127.0.0.1:6443" # the API server
      insecure-skip-tls-verify: true
      extensions: []
users:
  - name: 'it''s me'
    user:
      token: "a\\"b\\\\c"
      username: admin#1
      password: p@ss
contexts:
  -
    name: local
    context:
      cluster: local
      user: it's me
      namespace:
current-context: local
preferences: ~
`,
  "nested sequences and nulls": `a:
- - x
  - w
- -
  - z
b:
  c:
    d: null
  e: false
`,
  "CRLF line ends": "apiVersion: v1\r\nkind: Config\r\nclusters: []\r\n",
};

Deno.test("parseBlockYaml reads kubeconfig layouts as yaml does", async (t) => {
  for (const [name, text] of Object.entries(kubeconfigs)) {
    await t.step(name, () => {
      const doc = parseBlockYaml(text);
      assert.ok(doc, "given up on");
      assert.deepEqual(doc.value, parse(text, { version: "1.1" }));
    });
  }
  await t.step("the values it reads", () => {
    const doc = parseBlockYaml(kubeconfigs["quoted, commented, indented sequences"]);
    const value = doc?.value as {
      users: { name: string; user: Record<string, string> }[];
      contexts: { context: Record<string, unknown> }[];
      preferences: unknown;
    };
    assert.equal(value.users[0].name, "it's me");
    assert.deepEqual(value.users[0].user, {
      token: 'a"b\\c',
      username: "admin#1",
      password: "p@ss",
    });
    assert.equal(value.contexts[0].context.namespace, null);
    assert.equal(value.preferences, null);
  });
});

Deno.test("parseBlockYaml leaves the rest to the full parser", async (t) => {
  const cases: Record<string, string> = {
    "a number": "port: 6443\n",
    "a YAML 1.1 boolean": "insecure-skip-tls-verify: yes\n",
    "a capitalised null": "a: Null\n",
    "a date": "a: 2026-11-27\n",
    "an anchor and an alias": "a: &x b\nc: *x\n",
    "a tag": "a: !!str b\n",
    "a flow mapping": "a: {b: c}\n",
    "a flow sequence": "a: [b]\n",
    "a block scalar": "a: |\n  b\n",
    "a multi-line plain scalar": "a: b\n  c\n",
    "a multi-line quoted scalar": 'a: "b\n  c"\n',
    "an unknown escape": 'a: "\\x41"\n',
    "a duplicate key": "a: b\na: c\n",
    "a quoted key": '"a": b\n',
    "a merge key": "<<: {}\n",
    "a key that is a YAML 1.1 word": "on: b\n",
    "a tab": "a:\tb\n",
    "non-ASCII text": "a: é\n",
    "two documents": "a: b\n---\nc: d\n",
    "a directive": "%YAML 1.1\n---\na: b\n",
    "a scalar document": "just text\n",
    "an empty document": "# nothing\n",
    "a value with ': ' inside": "a: b: c\n",
    "text after a closing quote": "a: 'b' c\n",
    "nesting deeper than 64": Array.from({ length: 70 }, (_, i) => `${" ".repeat(i)}k:`)
      .join("\n"),
  };
  for (const [name, text] of Object.entries(cases)) {
    await t.step(name, () => assert.equal(parseBlockYaml(text), undefined));
  }
});

const alphabet = [
  ...` -:#'"\n{}[]&*!|>~\\ab1.yYeEnN0x_+%=<?,\r@/`,
  "  ",
  "- ",
  ": ",
  " #",
  "\t",
  "é",
  "---\n",
];

function mutate(text: string, rng: Rng): string {
  const edits = rng.int(1, 3);
  for (let i = 0; i < edits; i++) {
    const at = rng.int(0, text.length);
    const piece = rng.pick(alphabet);
    const kind = rng.next();
    if (kind < 0.4) text = text.slice(0, at) + piece + text.slice(at);
    else if (kind < 0.7) text = text.slice(0, at) + text.slice(at + 1);
    else text = text.slice(0, at) + piece + text.slice(at + 1);
  }
  return text;
}

Deno.test("parseBlockYaml on mutated kubeconfigs: gives up, or reads as yaml does", () => {
  const sources = Object.values(kubeconfigs);
  let read = 0;
  let givenUp = 0;
  for (let seed = 1; seed <= 6000; seed++) {
    // Seeded (mulberry32), so a failure names the seed that replays it.
    const text = mutate(sources[seed % sources.length], new Rng(seed));
    const doc = parseBlockYaml(text);
    if (doc === undefined) {
      givenUp++;
      continue;
    }
    read++;
    let expected: unknown;
    try {
      expected = parse(text, { version: "1.1" });
    } catch (err) {
      assert.fail(`seed ${seed}: yaml refuses what was read: ${(err as Error).message}\n${text}`);
    }
    assert.deepEqual(doc.value, expected, `seed ${seed}:\n${text}`);
  }
  // Most mutations keep the text in the subset; a reader that gave up on everything would pass
  // the loop above without checking anything.
  assert.ok(read > 1000 && givenUp > 1000, `read ${read}, given up ${givenUp}`);
});
