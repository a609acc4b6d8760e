import fc from "fast-check";

/**
 * Hostile CNI input for the fuzz campaign: the environment a runtime sets, the network config on
 * stdin and the Whereabouts flat file — mostly well-formed configs with a few wrong parts (so the
 * cases reach deep into validation and the store), plus type chaos, deep nesting, oversized values,
 * textual damage (truncation, duplicate keys, lone surrogates, BOM, trailing bytes) and random JSON.
 */

export interface CniCase {
  env: Record<string, string | undefined>;
  /** The config text on stdin (UTF-16: non-UTF-8 bytes are added by the binary campaign, see `toBytes`). */
  stdin: string;
  /** The flat file's text, served at the config's `configuration_path` when that is FLAT_DIR. */
  flat?: string;
  /** A label for the kind of stdin (tallied). */
  shape: string;
}

/** The directory name the configs point `configuration_path` at; the harness maps it to its own file. */
export const FLAT_DIR = "/fuzz-flat";
export const COMMANDS = ["ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION"] as const;

const pick = <T>(...values: T[]) => fc.constantFrom(...values);

/** Strings that break things: empty, blanks, NUL, dots, slashes, non-BMP, lone surrogates, long. */
export const weirdString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: "binary", maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
  {
    weight: 2,
    arbitrary: pick(
      "",
      " ",
      "\t",
      "\u0000",
      "a\u0000b",
      ".",
      "..",
      "a/b",
      "../../etc/passwd",
      "é",
      "💥💥💥💥💥💥💥💥",
      "\ud800",
      "\udfff\ud800",
      "\u202e",
      "x".repeat(300),
      "true",
      "null",
      "0",
      "-1",
      "1e309",
      "__proto__",
      "constructor",
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 300_000 }).map((n) => "y".repeat(n)) },
);

const ipv4Edge = pick(
  "0.0.0.0",
  "255.255.255.255",
  "10.0.0.1",
  "010.0.0.1",
  "10.0.0.256",
  "10.0.0",
  "10.0.0.0.1",
  "1e1.0.0.1",
  "0x0a.0.0.1",
  " 10.0.0.1",
  "10.0.0.1\n",
  "10.1.0.5",
);
const ipv6Edge = pick(
  "::",
  "::1",
  "fd00::1",
  "FD00::A",
  "fd00:0:0:0:0:0:0:1",
  "fd00:0000:0000::0001",
  "::ffff:10.0.0.1",
  "::ffff:0a00:0001",
  "64:ff9b::10.0.0.1",
  "fe80::1%eth0",
  "fe80::1%25eth0",
  "1:2:3:4:5:6:7:8",
  "1:2:3:4:5:6:7:8:9",
  ":::",
  "1::2::3",
  "fd00::g",
  "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
  "[fd00::1]",
);
export const address: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.ipV4() },
  { weight: 3, arbitrary: fc.ipV6() },
  { weight: 3, arbitrary: fc.oneof(ipv4Edge, ipv6Edge) },
  { weight: 1, arbitrary: fc.ipV4Extended() },
  { weight: 1, arbitrary: weirdString },
);

const cidrEdge = pick(
  "10.1.0.0/24",
  "10.1.0.0/30",
  "10.1.0.0/31",
  "10.1.0.1/32",
  "10.0.0.0/8",
  "0.0.0.0/0",
  "0.0.0.0/1",
  "10.1.0.7/24",
  "10.1.0.0/33",
  "10.1.0.0/-1",
  "10.1.0.0/024",
  "10.1.0.0/ 24",
  "10.1.0.0/",
  "10.1.0.0",
  "fd00:1::/64",
  "fd00:1::/48",
  "fd00:1::/126",
  "fd00:1::/127",
  "fd00:1::1/128",
  "::/0",
  "::/1",
  "::/128",
  "FD00:1::/64",
  "fd00:1:0:0:0:0:0:0/64",
  "::ffff:10.1.0.0/120",
  "::ffff:10.1.0.0/104",
  "fe80::%eth0/64",
  "fd00:1::/129",
  "2001:db8::/32",
  "1:2:3:4:5:6:7:8:9/64",
);
export const cidr: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: cidrEdge },
  { weight: 2, arbitrary: fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 32 })).map(([a, p]) => `${a}/${p}`) },
  { weight: 2, arbitrary: fc.tuple(fc.ipV6(), fc.integer({ min: 0, max: 128 })).map(([a, p]) => `${a}/${p}`) },
  { weight: 1, arbitrary: fc.tuple(address, fc.integer({ min: -2, max: 200 })).map(([a, p]) => `${a}/${p}`) },
  { weight: 1, arbitrary: weirdString },
);

const containerId = fc.oneof(
  { weight: 6, arbitrary: pick("c1", "c2", "c3", "pod-a", "pod-b", "0123456789abcdef") },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,80}$/) },
  { weight: 2, arbitrary: weirdString },
);
const ifName = fc.oneof(
  { weight: 6, arbitrary: pick("net1", "eth0", "net2") },
  { weight: 1, arbitrary: pick("a".repeat(15), "a".repeat(16), "ééééééé1", "ééééééé12", ".", "..", "a:b", "a b", "a/b") },
  { weight: 2, arbitrary: weirdString },
);
const cniArgs = fc.oneof(
  pick(
    "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_UID=uid-1",
    "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=c1;FOO=bar",
    "IgnoreUnknown=maybe",
    "UNKNOWN=1",
    ";;;",
    "=x",
    "novalue",
    "IP=10.1.0.9",
    "IP=10.1.0.9/24,fd00:1::9",
    "IP=not-an-ip",
    "IgnoreUnknown=true;IP=",
  ),
  fc
    .array(fc.tuple(fc.oneof(pick("K8S_POD_NAME", "K8S_POD_NAMESPACE", "K8S_POD_UID", "IP", "IgnoreUnknown"), weirdString), weirdString), {
      maxLength: 5,
    })
    .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join(";")),
  weirdString,
);

/** A value that is sometimes absent, sometimes hostile, mostly the given valid one. */
const mostly = (valid: fc.Arbitrary<string>, hostile: fc.Arbitrary<string>) =>
  fc.oneof({ weight: 48, arbitrary: valid }, { weight: 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: hostile });

/** The CNI_* variables: mostly valid, each one sometimes missing or hostile. */
export const cniEnv: fc.Arbitrary<Record<string, string | undefined>> = fc.record({
  CNI_COMMAND: fc.oneof(
    { weight: 10, arbitrary: pick("ADD") },
    { weight: 8, arbitrary: fc.constantFrom(...COMMANDS) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: weirdString },
  ),
  CNI_CONTAINERID: mostly(pick("c1", "c2", "c3", "pod-a", "pod-b", "0123456789abcdef"), containerId),
  CNI_IFNAME: mostly(pick("net1", "eth0", "net2"), ifName),
  CNI_NETNS: mostly(pick("/var/run/netns/fuzz"), weirdString),
  CNI_PATH: mostly(pick("/opt/cni/bin"), weirdString),
  CNI_ARGS: fc.oneof(
    { weight: 6, arbitrary: pick(undefined, "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_UID=uid-1") },
    { weight: 1, arbitrary: cniArgs },
  ),
});

const rangeEntry = fc.record(
  { range: cidr, range_start: address, range_end: address, exclude: fc.array(fc.oneof(cidr, address), { maxLength: 5 }), gateway: address },
  { requiredKeys: ["range"] },
);
const route = fc.record(
  { dst: cidr, gw: address, mtu: fc.integer({ min: -5, max: 70_000 }), table: fc.nat(), scope: fc.integer() },
  { requiredKeys: ["dst"] },
);

/** A datastore section that the harness can serve (`file`) or that fails cleanly (a closed local port). */
const storeKeys = fc.oneof(
  { weight: 8, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: fc.record({ datastore: pick("file", "consul", "", "FILE") }) },
  {
    weight: 1,
    arbitrary: fc.record({
      etcd_host: pick("127.0.0.1:1", "https://127.0.0.1:1", ",", ""),
      etcd_username: weirdString,
      etcd_password: pick("fuzz-Pa55word-QQ"),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ datastore: pick("kubernetes"), kubernetes: fc.record({ kubeconfig: pick("", "/nonexistent/kc") }) }),
  },
);

const ipamBlock = fc
  .tuple(
    fc.record(
      {
        type: fc.oneof({ weight: 10, arbitrary: pick("ipamkit", "whereabouts") }, { weight: 1, arbitrary: weirdString }),
        range: cidr,
        range_start: address,
        range_end: address,
        exclude: fc.array(fc.oneof(cidr, address, weirdString), { maxLength: 6 }),
        gateway: address,
        ipRanges: fc.array(rangeEntry, { maxLength: 3 }),
        routes: fc.array(route, { maxLength: 3 }),
        dns: fc.record({
          nameservers: fc.array(address, { maxLength: 3 }),
          domain: weirdString,
          search: fc.array(weirdString, { maxLength: 2 }),
        }),
        enable_overlapping_ranges: fc.boolean(),
        network_name: fc.oneof(pick("", "blue", "node-blocks", "blue-node-blocks", "Blue"), weirdString),
        allocation_policy: fc.oneof(pick("lowest-free", "round-robin", "random"), weirdString),
        node_block_size: fc.oneof(pick(1, 2, 3, 4, 6, 8, 16, 64, 1024, 2 ** 20, 2 ** 40, 0, -4, 4.5, 1e308), fc.integer()),
        node_name: fc.oneof(pick("node-a", "node-b"), weirdString),
        leader_lease_duration: fc.integer(),
        sleep_for_race: fc.oneof(pick(0), fc.integer()),
        reconciler_cron_expression: weirdString,
        log_level: weirdString,
        data_dir: fc.oneof(pick("/var/lib/cni/fuzz"), weirdString),
        agent_socket: fc.oneof(pick("/nonexistent/agent.sock"), weirdString),
        addresses: fc.array(fc.record({ address: cidr }), { maxLength: 2 }),
        node_slice_size: pick("/28", ""),
      },
      { requiredKeys: [] },
    ),
    storeKeys,
    fc.oneof({ weight: 5, arbitrary: pick(FLAT_DIR) }, { weight: 1, arbitrary: pick(undefined, "/nonexistent-dir") }, weirdString),
  )
  .map(([ipam, store, configurationPath]) => ({
    ...ipam,
    ...store,
    ...(configurationPath === undefined ? {} : { configuration_path: configurationPath }),
  }));

const prevResult = fc.oneof(
  fc.record({ cniVersion: pick("1.0.0"), ips: fc.array(fc.record({ address: cidr, gateway: address }), { maxLength: 3 }) }),
  fc.record({ ips: fc.array(fc.record({ version: pick("4", "6", "5"), address: cidr }), { maxLength: 2 }) }),
  fc.record({ ip4: fc.record({ ip: cidr }) }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** A config in the shape the runtime sends, most parts plausible, any part possibly wrong. */
export const netConf: fc.Arbitrary<Record<string, unknown>> = fc.record(
  {
    cniVersion: fc.oneof(
      { weight: 8, arbitrary: pick("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0") },
      { weight: 1, arbitrary: pick("0.2.0", "2.0.0", "1.0", "") },
    ),
    name: fc.oneof({ weight: 6, arbitrary: pick("fuzz-net", "net2") }, { weight: 1, arbitrary: weirdString }),
    type: pick("macvlan", "bridge"),
    ipam: ipamBlock,
    runtimeConfig: fc.record({ ips: fc.array(fc.oneof(address, cidr), { maxLength: 2 }), ipRanges: fc.constant([]) }, { requiredKeys: [] }),
    args: fc.record({ cni: fc.record({ ips: fc.array(address, { maxLength: 2 }) }) }),
    prevResult,
    "cni.dev/valid-attachments": fc.array(fc.record({ containerID: containerId, ifname: ifName }), { maxLength: 3 }),
    disableGC: fc.boolean(),
  },
  { requiredKeys: ["cniVersion", "name", "ipam"] },
);

const validRanges = [
  { range: "10.1.0.0/24", gateway: "10.1.0.1" },
  { range: "10.1.0.0/29", exclude: ["10.1.0.4/31"] },
  { range: "10.2.0.0/16", range_start: "10.2.0.10", range_end: "10.2.0.40" },
  { range: "10.3.0.0/30" },
  { range: "10.4.0.1/32" },
  { range: "10.0.0.0/8", exclude: ["10.0.0.0/9"] },
  { range: "fd00:1::/64", gateway: "fd00:1::1" },
  { range: "fd00:2::/120", exclude: ["fd00:2::/121"] },
  { range: "fd00:3::/127" },
  { range: "2001:db8::/32", range_start: "2001:db8::ffff:0" },
];

/** A coherent config (it would succeed as it is): the base that mutations then break in one to three places. */
export const plausibleConf: fc.Arbitrary<Record<string, unknown>> = fc
  .record(
    {
      cniVersion: pick("0.3.1", "0.4.0", "1.0.0", "1.1.0", "1.1.0"),
      name: pick("fuzz-net", "net2"),
      first: fc.constantFrom(...validRanges),
      more: fc.subarray(validRanges, { maxLength: 2 }),
      routes: fc.constantFrom([], [{ dst: "0.0.0.0/0" }], [{ dst: "fd00::/8", gw: "fd00:1::1", mtu: 1400 }]),
      dns: fc.constantFrom(undefined, { nameservers: ["10.1.0.53"], search: ["svc.local"] }),
      network_name: pick(undefined, "", "blue"),
      allocation_policy: pick(undefined, "lowest-free", "round-robin"),
      blocks: pick(undefined, undefined, undefined, { node_block_size: 4 }, { node_block_size: 16, node_name: "node-a" }),
      overlapping: pick(undefined, true, false),
      requested: pick(
        undefined,
        undefined,
        undefined,
        { runtimeConfig: { ips: ["10.1.0.9"] } },
        { args: { cni: { ips: ["fd00:1::9/64"] } } },
      ),
      prevResult: pick(undefined, { cniVersion: "1.0.0", ips: [{ address: "10.1.0.2/24" }] }),
      valid: pick(undefined, [], [{ containerID: "c1", ifname: "net1" }]),
    },
    { requiredKeys: ["cniVersion", "name", "first", "more", "routes"] },
  )
  .map((p) => {
    const others = p.more.filter((r) => r !== p.first);
    return {
      cniVersion: p.cniVersion,
      name: p.name,
      type: "macvlan",
      ipam: {
        type: "ipamkit",
        ...p.first,
        ...(others.length === 0 ? {} : { ipRanges: others }),
        ...(p.routes.length === 0 ? {} : { routes: p.routes }),
        ...(p.dns === undefined ? {} : { dns: p.dns }),
        ...(p.network_name === undefined ? {} : { network_name: p.network_name }),
        ...(p.allocation_policy === undefined ? {} : { allocation_policy: p.allocation_policy }),
        ...(p.overlapping === undefined ? {} : { enable_overlapping_ranges: p.overlapping }),
        ...(p.blocks ?? {}),
        configuration_path: FLAT_DIR,
      },
      ...(p.requested ?? {}),
      ...(p.prevResult === undefined ? {} : { prevResult: p.prevResult }),
      ...(p.valid === undefined ? {} : { "cni.dev/valid-attachments": p.valid }),
    };
  });

/** Every path (array of keys) in a JSON value, for picking where to break it. */
function paths(value: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(prefix);
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) paths(v, [...prefix, i], out);
  } else if (value !== null && typeof value === "object")
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) paths(v, [...prefix, k], out);
  return out;
}

function setAt(root: unknown, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path as [string | number, ...(string | number)[]];
  const copy = (Array.isArray(root) ? [...root] : { ...(root as Record<string, unknown>) }) as Record<string | number, unknown>;
  Object.defineProperty(copy, head, { value: setAt(copy[head], rest, value), enumerable: true, writable: true, configurable: true });
  return copy;
}

/** Placeholder replaced by a deeply nested text after JSON.stringify. */
const DEEP = "\u0001deep\u0001";

/** Values put in place of a part of the config: wrong types, huge, deep. */
const replacement = fc.oneof(
  { weight: 3, arbitrary: fc.oneof(cidr, address, weirdString) },
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 2, arbitrary: pick<unknown>(null, true, 0, -1, 1.5, 1e308, "", [], {}, [[]], { "": "" }, Number.MAX_SAFE_INTEGER + 2) },
  { weight: 1, arbitrary: pick(DEEP) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 1_000, max: 60_000 })
      .map((n) => Array.from({ length: n }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.0/24`)),
  },
  { weight: 1, arbitrary: fc.integer({ min: 10_000, max: 1_000_000 }).map((n) => "z".repeat(n)) },
  { weight: 1, arbitrary: fc.array(fc.record({ range: cidr }), { minLength: 50, maxLength: 400 }) },
);

interface Mutation {
  at: number;
  kind: "replace" | "delete" | "unknown-key";
  value: unknown;
}
const mutation: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  kind: pick("replace", "replace", "delete", "unknown-key"),
  value: replacement,
});

function mutate(conf: Record<string, unknown>, mutations: Mutation[]): unknown {
  let current: unknown = conf;
  for (const m of mutations) {
    const all = paths(current);
    const path = all[m.at % all.length] as (string | number)[];
    if (m.kind === "replace") current = setAt(current, path, m.value);
    else if (m.kind === "delete" && path.length > 0) {
      const parent = path.slice(0, -1);
      const last = path[path.length - 1] as string | number;
      const holder = parent.reduce<unknown>((v, k) => (v as Record<string | number, unknown>)[k], current);
      if (holder !== null && typeof holder === "object" && !Array.isArray(holder)) {
        const rest = Object.fromEntries(Object.entries(holder as Record<string, unknown>).filter(([k]) => k !== String(last)));
        current = setAt(current, parent, rest);
      }
    } else if (m.kind === "unknown-key") {
      const holder = path.reduce<unknown>((v, k) => (v as Record<string | number, unknown>)[k], current);
      if (holder !== null && typeof holder === "object" && !Array.isArray(holder))
        current = setAt(current, [...path, "__proto__"], m.value);
    }
  }
  return current;
}

function deepText(depth: number, kind: number): string {
  switch (kind % 3) {
    case 0:
      return `${"[".repeat(depth)}${"]".repeat(depth)}`;
    case 1:
      return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
    default:
      return `${'[{"range":'.repeat(depth)}"10.1.0.0/24"${"}]".repeat(depth)}`;
  }
}

/** Textual damage applied to the serialised config. */
const damage = fc.oneof(
  { weight: 30, arbitrary: fc.constant((text: string) => text) },
  { weight: 1, arbitrary: fc.nat().map((n) => (text: string) => text.slice(0, n % (text.length + 1))) },
  { weight: 1, arbitrary: fc.constant((text: string) => `\ufeff${text}`) },
  { weight: 1, arbitrary: weirdString.map((junk) => (text: string) => `${text}${junk}`) },
  { weight: 1, arbitrary: fc.constant((text: string) => text.replace("{", '{"cniVersion":7,"ipam":null,')) },
  { weight: 1, arbitrary: fc.constant((text: string) => text.replace(/"fuzz-net"/, '"fuzz-\\ud800net"')) },
  { weight: 1, arbitrary: fc.constant((text: string) => text.replace("{", '{"__proto__":{"ipam":{"type":"x"}},')) },
  { weight: 1, arbitrary: fc.constant((text: string) => text.replace(/"ipam":\{/, '"ipam":{"range":"10.1.0.0/24","range":"fd00::/64",')) },
  { weight: 1, arbitrary: fc.constant((text: string) => text.replaceAll(":", ": \u0000")) },
);

const stdinText: fc.Arbitrary<{ text: string; shape: string }> = fc.oneof(
  {
    weight: 14,
    arbitrary: fc
      .tuple(
        fc.oneof(
          { weight: 4, arbitrary: plausibleConf.map((conf) => ({ conf, base: "plausible" })) },
          { weight: 1, arbitrary: netConf.map((conf) => ({ conf, base: "wild" })) },
        ),
        fc.oneof(
          { weight: 1, arbitrary: fc.constant<Mutation[]>([]) },
          { weight: 1, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }) },
        ),
        damage,
        fc.constantFrom(10, 1_000, 20_000, 200_000),
        fc.nat(),
      )
      .map(([{ conf, base }, mutations, hurt, depth, kind]) => {
        const mutated = mutate(conf, mutations);
        const text = JSON.stringify(mutated) ?? "null";
        const deep = text.includes(JSON.stringify(DEEP));
        const shape = deep ? "deep" : `${base}${mutations.length === 0 ? "" : "-mutated"}`;
        return { text: hurt(deep ? text.replace(JSON.stringify(DEEP), deepText(depth, kind)) : text), shape };
      }),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => ({ text: JSON.stringify(v) ?? "null", shape: "json" })) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 200 }).map((text) => ({ text, shape: "text" })) },
  { weight: 1, arbitrary: pick({ text: "", shape: "empty" }, { text: "{}", shape: "empty" }, { text: "null", shape: "empty" }) },
);

/** The flat file: absent, a plausible one, or a hostile one. */
const flatFile = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.constant("{}") },
  {
    weight: 2,
    arbitrary: fc
      .record(
        {
          range: cidr,
          datastore: pick("file", "etcd"),
          etcd_password: pick("flat-Pa55word-ZZ"),
          kubernetes: fc.record({ kubeconfig: pick("/nonexistent/kc") }),
          node_block_size: pick(16, 3),
          enable_overlapping_ranges: fc.boolean(),
          exclude: fc.array(cidr, { maxLength: 3 }),
        },
        { requiredKeys: [] },
      )
      .map((v) => JSON.stringify(v)),
  },
  {
    weight: 1,
    arbitrary: fc.oneof(
      weirdString,
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? ""),
    ),
  },
);

export const cniCase: fc.Arbitrary<CniCase> = fc.tuple(cniEnv, stdinText, flatFile).map(([env, stdin, flat]) => ({
  env,
  stdin: stdin.text,
  ...(flat === undefined ? {} : { flat }),
  shape: stdin.shape,
}));

/** Bytes for a subprocess's stdin: UTF-8, sometimes with invalid sequences spliced in. */
export const byteDamage = fc.oneof(
  { weight: 9, arbitrary: fc.constant((b: Buffer) => b) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.nat(),
        fc.uint8Array({ minLength: 1, maxLength: 8 }).map((a) => Buffer.from(a.map((x) => 0x80 | x))),
      )
      .map(([at, junk]) => (b: Buffer) => {
        const i = at % (b.length + 1);
        return Buffer.concat([b.subarray(0, i), junk, b.subarray(i)]);
      }),
  },
  {
    weight: 1,
    arbitrary: fc.constant((b: Buffer) => Buffer.from(b.toString("latin1").replace(/"fuzz-net"/, '"fuzz-\xff\xfenet"'), "latin1")),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((a) => () => Buffer.from(a)) },
);
