/**
 * The generated CRI codec (src/cri_client/codec_gen.ts) against protobufjs, the reference
 * encoder proto-loader used: every response the client reads, encoded by protobufjs with every
 * field set, decodes to the same values; every request the client sends, encoded by the codec,
 * decodes in protobufjs to what was given. Then the edges one by one: int64 and uint64 extremes,
 * zero values, maps, merging, unknown fields, malformed data, and the committed file being what
 * the generator writes.
 */
import assert from "node:assert/strict";
import protobuf from "protobufjs";
import { fileURLToPath } from "node:url";
import {
  type CriMethod,
  ImageServiceMethods,
  RuntimeServiceMethods,
} from "../../src/cri_client/codec_gen.ts";
import { invalidWireFormat } from "../../src/util/protowire.ts";
import { generate, outputPath } from "../../scripts/gen_cri_codec.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const root = new protobuf.Root();
root.loadSync(`${repo}proto/runtime/v1/api.proto`, { keepCase: false });
root.resolveAll();

const methods: [string, CriMethod<unknown, unknown>][] = [
  ...Object.entries(RuntimeServiceMethods).map(([n, m]) => [`RuntimeService/${n}`, m]),
  ...Object.entries(ImageServiceMethods).map(([n, m]) => [`ImageService/${n}`, m]),
] as [string, CriMethod<unknown, unknown>][];

function typeOf(method: string, side: "request" | "response"): protobuf.Type {
  const [service, name] = method.split("/");
  const m = root.lookupService(`runtime.v1.${service}`).methods[name];
  return side === "request" ? m.resolvedRequestType! : m.resolvedResponseType!;
}

/** Values that differ per field and per depth, none of them a zero value. */
function scalarValue(type: string, id: number, depth: number): unknown {
  const n = id * 10 + depth + 1;
  switch (type) {
    case "string":
      return `v${n}-é`;
    case "bytes":
      return new Uint8Array([n, 0, 255]);
    case "bool":
      return true;
    case "int32":
      return -n;
    case "uint32":
      return 4294967295 - n;
    case "int64":
      return n % 2 === 0 ? -9223372036854775808n + BigInt(n) : 1764230400000000000n + BigInt(n);
    case "uint64":
      return 18446744073709551615n - BigInt(n);
  }
  throw new Error(type);
}

/**
 * A message of `type` with every field set (messages down to `depth` 3), in the client's shapes:
 * camelCase names, int64 as bigint, enums by name, maps as records.
 */
function filled(type: protobuf.Type, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of type.fieldsArray) {
    const one = (i: number): unknown => {
      if (f.resolvedType instanceof protobuf.Type) {
        return depth < 3 ? filled(f.resolvedType, depth + 1) : undefined;
      }
      if (f.resolvedType instanceof protobuf.Enum) {
        const names = Object.keys(f.resolvedType.values);
        return names[(i + 1) % names.length];
      }
      return scalarValue(f.type, f.id + i, depth);
    };
    if (f.map) {
      out[f.name] = { [`k${f.id}`]: `v${depth}`, "io.kubernetes.pod.name": "web-0", "": "" };
    } else if (f.repeated) {
      const values = [one(0), one(1)].filter((v) => v !== undefined);
      out[f.name] = values;
    } else {
      const v = one(0);
      if (v !== undefined) out[f.name] = v;
    }
  }
  return out;
}

/** `value` as protobufjs's `fromObject` takes it (int64 as decimal strings). */
function forProtobufjs(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Uint8Array) return value;
  if (Array.isArray(value)) return value.map(forProtobufjs);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, forProtobufjs(v)]));
  }
  return value;
}

/** The message as the codec decodes it: every field of `type` present, zero when not in `value`. */
function withZeros(type: protobuf.Type, value: Record<string, unknown>): Record<string, unknown> {
  const optional = new Set(["PodSandbox.metadata", "Container.metadata", "StatusResponse.status"]);
  const out: Record<string, unknown> = {};
  for (const f of type.fieldsArray) {
    const v = value[f.name];
    if (f.map) out[f.name] = v ?? {};
    else if (f.repeated) {
      out[f.name] = ((v ?? []) as unknown[]).map((e) =>
        f.resolvedType instanceof protobuf.Type
          ? withZeros(f.resolvedType, e as Record<string, unknown>)
          : e
      );
    } else if (f.resolvedType instanceof protobuf.Type) {
      if (v !== undefined) out[f.name] = withZeros(f.resolvedType, v as Record<string, unknown>);
      else if (optional.has(`${type.name}.${f.name}`)) out[f.name] = withZeros(f.resolvedType, {});
      else out[f.name] = undefined;
    } else if (v !== undefined) out[f.name] = v;
    else if (f.resolvedType instanceof protobuf.Enum) {
      out[f.name] = Object.keys(f.resolvedType.values)[0];
    } else {
      out[f.name] = ({
        string: "",
        bytes: new Uint8Array(0),
        bool: false,
        int64: 0n,
        uint64: 0n,
      } as Record<string, unknown>)[f.type] ?? 0;
    }
  }
  return out;
}

/** protobufjs's encoding of the client-shaped `value`. */
function pbEncode(type: protobuf.Type, value: unknown): Uint8Array {
  return type.encode(type.fromObject(forProtobufjs(value) as Record<string, unknown>)).finish();
}

/** protobufjs's decoding into the client's shapes (int64 as bigint, zero values present). */
function pbDecode(type: protobuf.Type, bytes: Uint8Array): unknown {
  const object = type.toObject(type.decode(bytes), {
    longs: String,
    enums: String,
    defaults: false,
    arrays: false,
    objects: false,
  });
  const toClient = (t: protobuf.Type, o: Record<string, unknown>): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const f of t.fieldsArray) {
      const v = o[f.name];
      if (v === undefined || v === null) continue;
      const one = (x: unknown): unknown => {
        if (f.resolvedType instanceof protobuf.Type) {
          return toClient(f.resolvedType, x as Record<string, unknown>);
        }
        if (f.type === "int64" || f.type === "uint64") return BigInt(x as string);
        if (f.type === "bytes") return new Uint8Array(x as Uint8Array);
        return x;
      };
      if (f.map) out[f.name] = { ...(v as Record<string, string>) };
      else if (f.repeated) out[f.name] = (v as unknown[]).map(one);
      else out[f.name] = one(v);
    }
    return out;
  };
  return toClient(type, object);
}

Deno.test("TestCodecDecodesWhatProtobufjsEncodes", async (t) => {
  for (const [name, method] of methods) {
    await t.step(`${name}: response with every field set`, () => {
      const type = typeOf(name, "response");
      const value = filled(type);
      assert.deepEqual(method.decode(pbEncode(type, value)), withZeros(type, value));
    });
    await t.step(`${name}: empty response → zero values`, () => {
      const type = typeOf(name, "response");
      assert.deepEqual(method.decode(new Uint8Array(0)), withZeros(type, {}));
    });
  }
});

Deno.test("TestCodecEncodesWhatProtobufjsDecodes", async (t) => {
  for (const [name, method] of methods) {
    await t.step(`${name}: request with every field set`, () => {
      const type = typeOf(name, "request");
      const value = filled(type);
      assert.deepEqual(pbDecode(type, method.encode(value)), value);
    });
  }
  await t.step("zero values are left out, as Go's encoder does", () => {
    const bytes = RuntimeServiceMethods.StopContainer.encode({ containerId: "", timeout: 0 });
    assert.deepEqual(bytes, new Uint8Array(0));
    const config = RuntimeServiceMethods.RunPodSandbox.encode({
      config: { metadata: { name: "", uid: "", namespace: "", attempt: 0 }, labels: {} },
    });
    // config (field 1) holding an empty metadata (field 1): the messages are present, empty.
    assert.deepEqual(config, new Uint8Array([10, 2, 10, 0]));
  });
  await t.step("a filter's state wrapper is sent even for the zero state", () => {
    const bytes = RuntimeServiceMethods.ListPodSandbox.encode({
      filter: { state: { state: "SANDBOX_READY" } },
    });
    assert.deepEqual(bytes, new Uint8Array([10, 2, 18, 0]));
    const decoded = pbDecode(typeOf("RuntimeService/ListPodSandbox", "request"), bytes);
    assert.deepEqual(decoded, { filter: { state: {} } });
  });
  await t.step("int64 from numbers and bigints, negative ones as ten bytes", () => {
    const type = typeOf("RuntimeService/RunPodSandbox", "request");
    const cases: [bigint | number, bigint][] = [
      [-1, -1n],
      [-9223372036854775808n, -9223372036854775808n],
      [9223372036854775807n, 9223372036854775807n],
      [2 ** 53 - 1, 9007199254740991n],
      [4294967296, 4294967296n],
      [1.9, 1n],
    ];
    for (const [given, want] of cases) {
      const bytes = RuntimeServiceMethods.RunPodSandbox.encode({
        config: {
          linux: {
            resources: { cpuQuota: given },
            securityContext: { supplementalGroups: [given] },
          },
        },
      });
      assert.deepEqual(pbDecode(type, bytes), {
        config: {
          linux: { resources: { cpuQuota: want }, securityContext: { supplementalGroups: [want] } },
        },
      }, String(given));
    }
  });
  await t.step("a name outside the enum is refused", () => {
    assert.throws(
      () =>
        RuntimeServiceMethods.ListContainers.encode({
          // @ts-expect-error: not a ContainerState
          filter: { state: { state: "CONTAINER_PAUSED" } },
        }),
      { message: 'runtime.v1.ContainerState has no value "CONTAINER_PAUSED"' },
    );
  });
});

Deno.test("TestCodecEdges", async (t) => {
  const containersType = typeOf("RuntimeService/ListContainers", "response");
  const decodeContainers = RuntimeServiceMethods.ListContainers.decode;
  const one = {
    containers: [{
      id: "c1",
      metadata: { name: "app", attempt: 4294967295 },
      state: "CONTAINER_EXITED",
      createdAt: -9223372036854775808n,
      labels: { "io.kubernetes.pod.name": "web" },
    }],
  };
  const oneBytes = pbEncode(containersType, one);

  await t.step("int64 and uint64 extremes", () => {
    const imageType = typeOf("ImageService/ImageStatus", "response");
    for (const size of [0n, 1n, 2n ** 53n + 1n, 18446744073709551615n]) {
      for (const uid of [-1n, -9223372036854775808n, 9223372036854775807n, 0n]) {
        const bytes = pbEncode(imageType, { image: { id: "i", size, uid: { value: uid } } });
        const got = ImageServiceMethods.ImageStatus.decode(bytes);
        assert.equal(got.image?.size, size);
        assert.equal(got.image?.uid?.value, uid);
      }
    }
    const c = decodeContainers(oneBytes).containers[0];
    assert.equal(c.createdAt, -9223372036854775808n);
    assert.equal(c.metadata.attempt, 4294967295);
  });
  await t.step("negative int32 (an exit code)", () => {
    const type = typeOf("RuntimeService/ExecSync", "response");
    const got = RuntimeServiceMethods.ExecSync.decode(pbEncode(type, { exitCode: -2147483648 }));
    assert.equal(got.exitCode, -2147483648);
  });
  await t.step("list entries' metadata is the zero message when absent", () => {
    const got = decodeContainers(pbEncode(containersType, { containers: [{ id: "c" }] }));
    assert.deepEqual(got.containers[0].metadata, { name: "", attempt: 0 });
    const status = RuntimeServiceMethods.ContainerStatus.decode(
      pbEncode(typeOf("RuntimeService/ContainerStatus", "response"), { status: { id: "c" } }),
    );
    assert.equal(status.status?.metadata, undefined);
  });
  await t.step("unknown fields of every wire type are skipped", () => {
    // Inside the container entry: field 99 as varint, fixed64, bytes, fixed32, and a group.
    const unknown = [
      0x98,
      0x06,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0x01, // 99 varint, 10 bytes
      0x99,
      0x06,
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      8, // 99 fixed64
      0x9a,
      0x06,
      3,
      0x61,
      0x62,
      0x63, // 99 bytes "abc"
      0x9d,
      0x06,
      1,
      2,
      3,
      4, // 99 fixed32
      0x9b,
      0x06,
      0x08,
      0x01,
      0x9c,
      0x06, // 99 start group, field 1 = 1, 99 end group
      0x30,
      0x05, // field 6 (state) as varint 5: a number with no name
      0x0d,
      1,
      2,
      3,
      4, // field 1 (id, a string) with wire type fixed32: unknown, skipped
    ];
    const entry = pbEncode(containersType.fields.containers.resolvedType as protobuf.Type, {
      ...one.containers[0],
      state: "CONTAINER_EXITED",
    });
    const inner = new Uint8Array([...entry, ...unknown]);
    const bytes = new Uint8Array([0x0a, inner.length, ...inner, 0xf8, 0x07, 0x01]);
    const got = decodeContainers(bytes).containers[0];
    assert.equal(got.id, "c1");
    assert.equal(got.state, 5 as unknown as string);
    assert.deepEqual(got.labels, { "io.kubernetes.pod.name": "web" });
  });
  await t.step(
    "map entries: a missing key or value is empty, a repeated key takes the last",
    () => {
      // labels (field 8): {key: "a"}, {value: "x"}, {key: "a", value: "2"}, {key: "__proto__", value: "p"}
      const entries = [
        [0x42, 3, 0x0a, 1, 0x61],
        [0x42, 3, 0x12, 1, 0x78],
        [0x42, 6, 0x0a, 1, 0x61, 0x12, 1, 0x32],
        [0x42, 14, 0x0a, 9, ...new TextEncoder().encode("__proto__"), 0x12, 1, 0x70],
      ].flat();
      const bytes = new Uint8Array([0x0a, entries.length, ...entries]);
      const labels = decodeContainers(bytes).containers[0].labels;
      assert.deepEqual(Object.entries(labels), [["a", "2"], ["", "x"], ["__proto__", "p"]]);
      assert.equal(Object.getPrototypeOf(labels), Object.prototype);
    },
  );
  await t.step("a message field seen twice is merged, as Go merges it", () => {
    // metadata (field 3) {name: "a"} then {attempt: 2}.
    const bytes = new Uint8Array([0x0a, 9, 0x1a, 3, 0x0a, 1, 0x61, 0x1a, 2, 0x10, 2]);
    assert.deepEqual(decodeContainers(bytes).containers[0].metadata, { name: "a", attempt: 2 });
  });
  await t.step("a status decoded again from the same bytes is the same frozen object", () => {
    const type = typeOf("RuntimeService/ContainerStatus", "response");
    const decode = RuntimeServiceMethods.ContainerStatus.decode;
    const status = { id: "memo-1", labels: { app: "web" }, mounts: [{ containerPath: "/data" }] };
    const first = decode(pbEncode(type, { status, info: { pid: "1" } }));
    const again = decode(pbEncode(type, { status, info: { pid: "2" } }));
    assert.equal(again.status, first.status);
    assert.ok(Object.isFrozen(first.status) && Object.isFrozen(first.status?.labels));
    assert.deepEqual(again.info, { pid: "2" }); // the response around it is decoded every time
    const changed = decode(pbEncode(type, { status: { ...status, labels: { app: "api" } } }));
    assert.notEqual(changed.status, first.status);
    assert.deepEqual(changed.status?.labels, { app: "api" });
    const sandboxType = typeOf("RuntimeService/PodSandboxStatus", "response");
    const decodeSandbox = RuntimeServiceMethods.PodSandboxStatus.decode;
    const sandbox = pbEncode(sandboxType, { status: { id: "memo-s", labels: { app: "web" } } });
    assert.equal(decodeSandbox(sandbox).status, decodeSandbox(sandbox).status);
  });
  await t.step("a memoized status seen twice is merged into a copy", () => {
    const type = typeOf("RuntimeService/ContainerStatus", "response");
    const decode = RuntimeServiceMethods.ContainerStatus.decode;
    const part = (status: Record<string, unknown>) => [...pbEncode(type, { status })];
    const firstPart = { id: "memo-2", labels: { a: "1" } };
    const memoized = decode(new Uint8Array(part(firstPart))).status;
    const merged = decode(new Uint8Array([...part(firstPart), ...part({ labels: { b: "2" } })]));
    assert.equal(merged.status?.id, "memo-2");
    assert.deepEqual(merged.status?.labels, { a: "1", b: "2" });
    assert.deepEqual(memoized?.labels, { a: "1" }); // the shared value is untouched
  });
  await t.step("malformed data: Go's error", () => {
    const cases: [string, number[]][] = [
      ["truncated", [...oneBytes.subarray(0, oneBytes.length - 1)]],
      ["length past the end", [0x0a, 0x7f, 0x00]],
      ["varint over ten bytes", [0x08, ...Array(10).fill(0xff), 0x01]],
      ["field number 0", [0x00, 0x01]],
      ["end group without a start", [0x0c]],
      ["wire type 7", [0x0f]],
      ["group ended by another field", [0x9b, 0x06, 0xa4, 0x06]],
    ];
    for (const [name, bytes] of cases) {
      assert.throws(() => decodeContainers(new Uint8Array(bytes)), {
        message: invalidWireFormat,
      }, name);
    }
  });
  await t.step("invalid UTF-8 names the field, as Go does", () => {
    assert.throws(() => decodeContainers(new Uint8Array([0x0a, 4, 0x0a, 2, 0xc3, 0x28])), {
      message: "proto: field runtime.v1.Container.id contains invalid UTF-8",
    });
  });
  await t.step("a long non-ASCII string", () => {
    const id = "ü".repeat(100) + "x".repeat(200);
    const got = decodeContainers(pbEncode(containersType, { containers: [{ id }] }));
    assert.equal(got.containers[0].id, id);
  });
});

Deno.test("codec_gen.ts is what scripts/gen_cri_codec.ts writes (run `deno task gen:cri`)", async () => {
  const committed = await Deno.readTextFile(`${repo}${outputPath}`);
  assert.ok(committed === await generate(), `${outputPath} is stale: run \`deno task gen:cri\``);
});

Deno.test("TestGeneratorPresence", async (t) => {
  // What api.proto does not use yet: oneofs, proto3 optional, repeated enums, unpacked numbers.
  const dir = await Deno.makeTempDir();
  try {
    const proto = `${dir}/presence.proto`;
    const fields = `
      oneof choice { string name = 1; int64 n = 2; Inner inner = 3; Color color = 4; }
      optional int32 maybe = 5;
      repeated int32 nums = 6;
      repeated Color colors = 7;`;
    await Deno.writeTextFile(
      proto,
      `syntax = "proto3";
      package t.v1;
      service S { rpc Call(Req) returns (Res) {} }
      enum Color { RED = 0; BLUE = 1; }
      message Inner { string s = 1; }
      message Req { ${fields} }
      message Res { ${fields} }`,
    );
    const file = `${dir}/codec.ts`;
    await Deno.writeTextFile(
      file,
      await generate({
        proto,
        services: ["t.v1.S"],
        protowire: new URL("../../src/util/protowire.ts", import.meta.url).href,
      }),
    );
    const { SMethods } = await import(new URL(`file://${file}`).href);
    const pb = new protobuf.Root();
    pb.loadSync(proto, { keepCase: false });
    const req = pb.lookupType("t.v1.Req");
    const res = pb.lookupType("t.v1.Res");

    await t.step("a oneof member and an optional field are sent even when zero", () => {
      const bytes = SMethods.Call.encode({ n: 0, maybe: 0 });
      assert.deepEqual([...bytes], [0x10, 0, 0x28, 0]);
      const back = req.toObject(req.decode(bytes), { longs: String, oneofs: true });
      assert.deepEqual(back, { n: "0", maybe: 0, choice: "n", _maybe: "maybe" });
    });
    await t.step("the last oneof member on the wire wins, the others are cleared", () => {
      const bytes = new Uint8Array([
        ...res.encode(res.fromObject({ name: "a" })).finish(),
        ...res.encode(res.fromObject({ inner: { s: "x" } })).finish(),
        ...res.encode(res.fromObject({ color: "BLUE" })).finish(),
      ]);
      const got = SMethods.Call.decode(bytes);
      assert.equal(got.name, undefined);
      assert.equal(got.inner, undefined);
      assert.equal(got.color, "BLUE");
      assert.equal(got.maybe, undefined);
    });
    await t.step("repeated numbers and enums, packed or not", () => {
      const unpacked = [0x30, 1, 0x30, 0x7f, 0x38, 1, 0x38, 0];
      const packed = [0x32, 2, 1, 0x7f, 0x3a, 2, 1, 0];
      for (const bytes of [unpacked, packed]) {
        const got = SMethods.Call.decode(new Uint8Array(bytes));
        assert.deepEqual(got.nums, [1, 127]);
        assert.deepEqual(got.colors, ["BLUE", "RED"]);
      }
      const sent = SMethods.Call.encode({ nums: [1, -1], colors: ["BLUE", "RED"] });
      const back = req.toObject(req.decode(sent), { enums: String });
      assert.deepEqual(back, { nums: [1, -1], colors: ["BLUE", "RED"] });
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
