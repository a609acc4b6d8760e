import fc from "fast-check";

// Generated configs and flat files for the differential test of the binary's JSON reader
// (src/forwarder-differential.test.ts): JSON trees around the routing keys, written out with the
// tricks a hostile author would use — escapes of every kind, U+0000 in keys and values, duplicate
// keys, deep nesting around the reader's bound, invalid UTF-8, lone surrogates, numbers at the
// edges of their casts — and sometimes damaged as text.

type Json =
  | { t: "str"; v: string }
  | { t: "num"; v: string }
  | { t: "lit"; v: "true" | "false" | "null" }
  | { t: "obj"; m: [string, Json][] }
  | { t: "arr"; v: Json[] }
  | { t: "deep"; n: number; object: boolean; inner: Json };

const KEYS = ["agent_socket", "agent_required", "agent_timeout", "agent_uid"];
const keyText = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...KEYS) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "ipam",
      "ipam\0",
      "agent_uid\0",
      "agent_socket\0",
      "\0agent_socket",
      "agent_sockeT",
      "__proto__",
      "agent_socket\ufffd",
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);
const socketText = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom("/run/ipamkit/agent.sock", "", "relative.sock", "/x\0y", "/run/é€😀", "/\ud800lone", "/") },
  // at the reader's bound (4095 bytes), in one- and two-byte characters
  { weight: 1, arbitrary: fc.integer({ min: 4090, max: 4100 }).map((n) => `/${"s".repeat(n - 1)}`) },
  { weight: 1, arbitrary: fc.integer({ min: 2044, max: 2050 }).map((n) => `/${"é".repeat(n)}`) },
  { weight: 4, arbitrary: fc.string({ maxLength: 12 }).map((s) => `/${s}`) },
);
const numberText = fc.oneof(
  fc.constantFrom(
    "0",
    "-0",
    "1",
    "30",
    "31",
    "2.5",
    "1e3",
    "1E+1",
    "1e-400",
    "1e300",
    "-1e300",
    "1e400",
    "65534",
    "9007199254740991",
    "9007199254740992",
    "9007199254740993",
    "18446744073709551616",
    "-1",
    "0.0",
    "30.000000000000001",
    "29.999999999999999",
    "4294967295",
    "4294967296",
    "1.5",
    "-0.0e5",
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.integer().map(String),
);

const json: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    { weight: 3, arbitrary: socketText.map((v) => ({ t: "str" as const, v })) },
    { weight: 3, arbitrary: numberText.map((v) => ({ t: "num" as const, v })) },
    {
      weight: 2,
      arbitrary: fc.constantFrom("true", "false", "null").map((v) => ({ t: "lit" as const, v: v as "true" | "false" | "null" })),
    },
    { weight: 2, arbitrary: fc.array(fc.tuple(keyText, tie("value")), { maxLength: 4 }).map((m) => ({ t: "obj" as const, m })) },
    { weight: 1, arbitrary: fc.array(tie("value"), { maxLength: 3 }).map((v) => ({ t: "arr" as const, v })) },
  ),
})).value;

/** A value for a routing key: mostly of the key's own kind, sometimes anything. */
const valueFor = (key: string): fc.Arbitrary<Json> =>
  fc.oneof(
    {
      weight: 4,
      arbitrary:
        key === "agent_socket"
          ? socketText.map((v) => ({ t: "str" as const, v }))
          : key === "agent_required"
            ? fc.constantFrom("true", "false", "null").map((v) => ({ t: "lit" as const, v: v as "true" | "false" | "null" }))
            : numberText.map((v) => ({ t: "num" as const, v })),
    },
    { weight: 1, arbitrary: json },
  );

/** An object of routing keys (each present or not), with other members before or after (repeats: the last one wins). */
const routingObject: fc.Arbitrary<Json> = fc
  .tuple(
    ...KEYS.map((key) =>
      fc.option(
        valueFor(key).map((v): [string, Json] => [key, v]),
        { freq: 3 },
      ),
    ),
    fc.array(fc.tuple(keyText, json), { maxLength: 3 }),
    fc.boolean(),
  )
  .map((parts) => {
    const own = (parts.slice(0, KEYS.length) as ([string, Json] | null)[]).filter((p): p is [string, Json] => p !== null);
    const extra = parts[KEYS.length] as [string, Json][];
    const extraFirst = parts[KEYS.length + 1] as boolean;
    return { t: "obj" as const, m: extraFirst ? [...extra, ...own] : [...own, ...extra] };
  });
const ipamObject = routingObject;

/** Nesting around the reader's bound (512): under it, at it, just past it. */
const deep = (inner: Json) =>
  fc
    .tuple(fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 505, max: 520 })), fc.boolean())
    .map(([n, object]) => ({ t: "deep" as const, n, object, inner }));

/** A whole config: an object around `ipam` (sometimes twice, sometimes nested deep, sometimes not an object). */
export const configTree: fc.Arbitrary<Json> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(ipamObject, fc.array(fc.tuple(keyText, json), { maxLength: 3 }))
      .map(([ipam, rest]) => ({ t: "obj" as const, m: [...rest, ["ipam", ipam] as [string, Json]] })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(ipamObject, ipamObject)
      .map(([a, b]) => ({ t: "obj" as const, m: [["ipam", a] as [string, Json], ["ipam\0", b] as [string, Json]] })),
  },
  { weight: 1, arbitrary: ipamObject.chain((ipam) => deep(ipam)).map((d) => ({ t: "obj" as const, m: [["ipam", d] as [string, Json]] })) },
  { weight: 1, arbitrary: ipamObject.chain((ipam) => deep({ t: "obj", m: [["ipam", ipam]] })) },
  { weight: 1, arbitrary: json },
);

/** A flat file: mostly an object of routing keys (repeated, escaped, with NULs), sometimes anything. */
export const flatTree: fc.Arbitrary<Json> = fc.oneof(
  { weight: 6, arbitrary: routingObject },
  { weight: 1, arbitrary: ipamObject.chain((o) => deep(o)) },
  { weight: 1, arbitrary: json },
);

/** How the text is written: the PRNG seed of every formatting choice, and damage applied to the whole. */
export const writing = fc.record({
  seed: fc.integer(),
  damage: fc.oneof(
    { weight: 12, arbitrary: fc.constant("none") },
    { weight: 1, arbitrary: fc.constantFrom("truncate", "bom", "trailing", "nul-after", "nbsp") },
  ),
});

const INVALID_UTF8 = [
  [0xff],
  [0xc3],
  [0xe2, 0x82],
  [0xed, 0xa0, 0x80],
  [0xf0, 0x9f],
  [0xc0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0x80],
  [0xe0, 0x80],
];

/** mulberry32 */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Written bytes: Buffers and single bytes, joined once at the end. */
type Out = (Buffer | number)[];

function stringBytes(text: string, rnd: () => number, out: Out): void {
  const style = rnd();
  // most strings as JSON.stringify writes them; the others character by character (the first 64)
  if (style >= 0.15 && style <= 0.6) {
    out.push(Buffer.from(JSON.stringify(text), "utf8"));
    return;
  }
  const chars = [...text];
  out.push(0x22);
  for (const ch of chars.slice(0, 64)) {
    const code = ch.codePointAt(0) ?? 0;
    const mustEscape = code < 0x20 || ch === '"' || ch === "\\";
    const r = rnd();
    if (style < 0.05 && r < 0.02) out.push(0x5c, 0x00); // a backslash before a raw NUL: not JSON
    if (style < 0.15 && r < 0.1) out.push(Buffer.from(INVALID_UTF8[Math.floor(rnd() * INVALID_UTF8.length)] ?? [0xff]));
    if (mustEscape || (style > 0.6 && r < 0.5)) {
      const short = { '"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "/": "\\/" }[ch];
      if (short !== undefined && rnd() < 0.5) out.push(Buffer.from(short));
      else if (code > 0xffff) {
        const hi = 0xd800 + ((code - 0x10000) >> 10);
        const lo = 0xdc00 + ((code - 0x10000) & 0x3ff);
        out.push(Buffer.from(`\\u${hi.toString(16).padStart(4, "0")}\\u${lo.toString(16).toUpperCase().padStart(4, "0")}`));
      } else out.push(Buffer.from(`\\u${code.toString(16).padStart(4, "0")}`));
    } else {
      out.push(Buffer.from(ch, "utf8"));
    }
  }
  if (chars.length > 64) out.push(Buffer.from(JSON.stringify(chars.slice(64).join("")).slice(1, -1), "utf8"));
  out.push(0x22);
}

function ws(rnd: () => number, out: Out): void {
  if (rnd() < 0.7) return;
  const choices = [0x20, 0x09, 0x0a, 0x0d];
  for (let i = Math.floor(rnd() * 3); i >= 0; i--) out.push(choices[Math.floor(rnd() * 4)] ?? 0x20);
}

const OPEN_D = Buffer.from('{"d":');

function write(value: Json, rnd: () => number, out: Out): void {
  ws(rnd, out);
  switch (value.t) {
    case "str":
      stringBytes(value.v, rnd, out);
      break;
    case "num":
    case "lit":
      out.push(Buffer.from(value.v));
      break;
    case "obj":
      out.push(0x7b);
      value.m.forEach(([key, v], i) => {
        if (i > 0) out.push(0x2c);
        ws(rnd, out);
        stringBytes(key, rnd, out);
        ws(rnd, out);
        out.push(0x3a);
        write(v, rnd, out);
      });
      ws(rnd, out);
      out.push(0x7d);
      break;
    case "arr":
      out.push(0x5b);
      value.v.forEach((v, i) => {
        if (i > 0) out.push(0x2c);
        write(v, rnd, out);
      });
      out.push(0x5d);
      break;
    case "deep":
      out.push(value.object ? Buffer.concat(Array.from({ length: value.n }, () => OPEN_D)) : Buffer.alloc(value.n, 0x5b));
      write(value.inner, rnd, out);
      out.push(Buffer.alloc(value.n, value.object ? 0x7d : 0x5d));
      break;
  }
  ws(rnd, out);
}

/** The bytes of a tree, written with the given choices and damage. */
export function bytesOf(value: Json, how: { seed: number; damage: string }): Buffer {
  const rnd = prng(how.seed);
  const out: Out = [];
  write(value, rnd, out);
  let bytes = Buffer.concat(out.map((part) => (typeof part === "number" ? Buffer.of(part) : part)));
  if (how.damage === "truncate") bytes = bytes.subarray(0, Math.floor(rnd() * bytes.length));
  if (how.damage === "bom") bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
  if (how.damage === "trailing") bytes = Buffer.concat([bytes, Buffer.from(" x")]);
  if (how.damage === "nul-after") bytes = Buffer.concat([bytes, Buffer.from([0])]);
  if (how.damage === "nbsp") bytes = Buffer.concat([Buffer.from([0xc2, 0xa0]), bytes]);
  return bytes;
}
