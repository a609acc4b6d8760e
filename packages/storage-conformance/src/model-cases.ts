import {
  AddressUnavailableError,
  type AttachmentKey,
  createIpam,
  createNodeBlockIpam,
  formatIp,
  formatKey,
  type Ipam,
  type IpamStore,
  type NodeBlockIpam,
  parseCidr,
  parseRange,
  type Range,
  RangeExhaustedError,
} from "@ipamkit/core";
import fc from "fast-check";
import { expect, it } from "vitest";
import { key, type SuiteContext } from "./context.js";

/**
 * Model-based random operation sequences (fast-check commands): allocate on one range or on two
 * overlapping ones at once, request a specific address, release by exact key, conditional release
 * with a current and with a stale observation, and ADD/DEL through per-node blocks — against the
 * real store, with the invariants checked after every step by reading the store back:
 * no address held twice within a network, every acknowledged reservation present until released,
 * and nothing else held (a release takes exactly its key).
 *
 * Size: RELIABILITY=full runs ~19k operations per store (the reliability campaign), CI a bounded run.
 */
const FULL = process.env.RELIABILITY === "full";
const RUNS = FULL ? 400 : 6;
const MAX_COMMANDS = FULL ? 120 : 40;

// Two overlapping ranges (protected by claims) and a block-served range; small enough to fill.
const A = parseRange({ range: "10.70.0.0/28", exclude: ["10.70.0.4/31"], gateway: "10.70.0.1" });
const B = parseRange({ range: "10.70.0.8/29" });
const C = parseRange({ range: "10.71.0.0/27" });

interface Model {
  /** keyText → its reservations as `pool CIDR|address` (two overlapping ranges can share an address text). */
  held: Map<string, string[]>;
}

interface Real {
  store: IpamStore;
  ipam: Ipam;
  nodes: NodeBlockIpam[];
  network: string;
  blockNetwork: string;
  ops: { count: number };
}

const keyOf = (k: number): AttachmentKey => key(`m${k}`, k % 3 === 0 ? "net2" : "net1");
/** Even keys always take both overlapping ranges at once (all-or-nothing), odd keys only A. */
const rangesOf = (k: number): Range[] => (k % 2 === 0 ? [A, B] : [A]);
const blockKey = (node: number, k: number): AttachmentKey => key(`b${node}x${k}`);

/** Every reservation per network, read back from the store: keyText → `pool CIDR|address` entries. */
async function heldByNetwork(store: IpamStore): Promise<Map<string, Map<string, string[]>>> {
  const out = new Map<string, Map<string, string[]>>();
  for (const ref of await store.listPools()) {
    const held = out.get(ref.network) ?? new Map<string, string[]>();
    out.set(ref.network, held);
    const cidr = parseCidr(ref.cidr);
    for (const r of (await store.readPool(ref))?.pool ?? []) {
      const text = formatKey(r.key);
      held.set(text, [...(held.get(text) ?? []), `${ref.cidr}|${formatIp({ family: cidr.family, value: cidr.network + r.offset })}`]);
    }
  }
  return out;
}

/** Reads the store back: every address once per network, and exactly the model's reservations. */
async function checkInvariants(model: Model, real: Real): Promise<void> {
  const byNetwork = await heldByNetwork(real.store);
  for (const [network, held] of byNetwork) {
    const addresses = [...held.values()].flat().map((entry) => entry.slice(entry.indexOf("|") + 1));
    expect(new Set(addresses).size, `an address held twice in ${network}`).toBe(addresses.length);
  }
  const stored = new Map([...(byNetwork.get(real.network) ?? []), ...(byNetwork.get(real.blockNetwork) ?? [])]);
  const normalise = (m: Map<string, string[]>) => new Map([...m].map(([k, v]) => [k, [...v].sort()]));
  expect(normalise(stored)).toEqual(normalise(model.held));
}

class AllocateCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly k: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    real.ops.count++;
    const text = formatKey(keyOf(this.k));
    try {
      const got = await real.ipam.allocate({
        network: real.network,
        ranges: rangesOf(this.k),
        key: keyOf(this.k),
        podRef: `ns/p${this.k}`,
      });
      const addresses = got.map((a) => `${a.pool.cidr}|${formatIp(a.address)}`);
      // idempotent: what the key holds is handed back (a range it lost to releaseIf is filled anew)
      for (const held of model.held.get(text) ?? []) expect(addresses, "an ADD of a held key is idempotent").toContain(held);
      model.held.set(text, addresses);
    } catch (error) {
      if (!(error instanceof RangeExhaustedError)) throw error;
      expect(model.held.get(text)?.length ?? 0, "a fully held key never meets exhaustion").toBeLessThan(rangesOf(this.k).length);
    }
    await checkInvariants(model, real);
  }
  toString = () => `allocate(m${this.k})`;
}

class StaticCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly k: number,
    readonly pick: number,
  ) {}
  check = (model: Readonly<Model>) => !model.held.has(formatKey(keyOf(this.k)));
  async run(model: Model, real: Real) {
    real.ops.count++;
    const address = formatIp({ family: 4, value: A.cidr.network + 1n + BigInt(this.pick % 14) });
    try {
      const got = await real.ipam.allocate({ network: real.network, ranges: [A], key: keyOf(this.k), addresses: [address] });
      expect(got.map((a) => formatIp(a.address))).toEqual([address]);
      model.held.set(formatKey(keyOf(this.k)), [`${A.cidr.text}|${address}`]);
    } catch (error) {
      if (!(error instanceof AddressUnavailableError)) throw error;
      const holders = [...model.held.values()].flat().map((entry) => entry.slice(entry.indexOf("|") + 1));
      // refused only when held (here or in the overlapping range), excluded, or the gateway
      expect(holders.includes(address) || ["10.70.0.1", "10.70.0.4", "10.70.0.5"].includes(address), `refused ${address}`).toBe(true);
    }
    await checkInvariants(model, real);
  }
  toString = () => `static(m${this.k}, ${this.pick})`;
}

class ReleaseCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly k: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    real.ops.count++;
    const text = formatKey(keyOf(this.k));
    const released = await real.ipam.release({ network: real.network, ranges: [A, B], key: keyOf(this.k) });
    expect(released.map((r) => `${r.pool.cidr}|${formatIp(r.address)}`).sort()).toEqual([...(model.held.get(text) ?? [])].sort());
    model.held.delete(text);
    await checkInvariants(model, real);
  }
  toString = () => `release(m${this.k})`;
}

class ReleaseIfCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly k: number,
    readonly stale: boolean,
  ) {}
  /** Only when the key holds an address in A (it may have lost it to an earlier releaseIf). */
  check = (model: Readonly<Model>) => (model.held.get(formatKey(keyOf(this.k))) ?? []).some((e) => e.startsWith(`${A.cidr.text}|`));
  async run(model: Model, real: Real) {
    real.ops.count++;
    const ref = { network: real.network, cidr: A.cidr.text };
    const observed = (await real.store.readPool(ref))?.pool.forKey(keyOf(this.k));
    if (observed === undefined) throw new Error(`model holds m${this.k} in ${A.cidr.text}, the store does not`);
    const expected = this.stale ? { ...observed, createdAt: "1999-01-01T00:00:00.000Z" } : observed;
    const outcome = await real.ipam.releaseIf(ref, expected);
    expect(outcome).toBe(this.stale ? "changed" : "released");
    if (!this.stale) {
      const text = formatKey(keyOf(this.k));
      const left = (model.held.get(text) ?? []).filter((e) => !e.startsWith(`${A.cidr.text}|`));
      if (left.length === 0) model.held.delete(text);
      else model.held.set(text, left);
    }
    await checkInvariants(model, real);
  }
  toString = () => `releaseIf(m${this.k}, ${this.stale ? "stale" : "current"})`;
}

class BlockCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly node: number,
    readonly k: number,
    readonly del: boolean,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    real.ops.count++;
    const ipam = real.nodes[this.node] as NodeBlockIpam;
    const k = blockKey(this.node, this.k);
    const text = formatKey(k);
    if (this.del) {
      const released = await ipam.release({ network: real.blockNetwork, ranges: [C], key: k });
      expect(released.map((r) => `${r.pool.cidr}|${formatIp(r.address)}`)).toEqual(model.held.get(text) ?? []);
      model.held.delete(text);
    } else {
      try {
        const [got] = await ipam.allocate({ network: real.blockNetwork, ranges: [C], key: k });
        const address = `${got?.pool.cidr}|${formatIp(got?.address ?? { family: 4, value: 0n })}`;
        if (model.held.has(text)) expect([address]).toEqual(model.held.get(text));
        model.held.set(text, [address]);
      } catch (error) {
        if (!(error instanceof RangeExhaustedError)) throw error;
      }
    }
    await checkInvariants(model, real);
  }
  toString = () => `block(node ${this.node}, b${this.node}x${this.k}, ${this.del ? "DEL" : "ADD"})`;
}

const commands = [
  fc.nat(24).map((k) => new AllocateCommand(k)),
  // odd keys only: a static request names one range, as those keys do
  fc.tuple(fc.nat(11), fc.nat(40)).map(([n, pick]) => new StaticCommand(2 * n + 1, pick)),
  fc.nat(24).map((k) => new ReleaseCommand(k)),
  fc.tuple(fc.nat(24), fc.boolean()).map(([k, stale]) => new ReleaseIfCommand(k, stale)),
  fc.tuple(fc.nat(2), fc.nat(12), fc.boolean()).map(([node, k, del]) => new BlockCommand(node, k, del)),
];

export function registerModelCases(ctx: SuiteContext): void {
  it(`model-based random operation sequences (${RUNS} runs of up to ${MAX_COMMANDS}), invariants read back after every step`, async () => {
    const name = ctx.store().name;
    const ops = { count: 0 };
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: MAX_COMMANDS, size: "max" }), async (cmds) => {
        run += 1;
        // each run (and each shrink) on a fresh, empty store: no state leaks between runs, and reading
        // everything back after each step costs this run's pools, not every earlier run's
        const store = await ctx.options.create();
        const real: Real = {
          store,
          ipam: createIpam({ store, retry: { baseDelayMs: 0 } }),
          nodes: [0, 1, 2].map((n) => createNodeBlockIpam({ store, node: `node-${n}`, blockSize: 8, retry: { baseDelayMs: 0 } })),
          network: `model-${run}`,
          blockNetwork: `model-${run}-b`,
          ops,
        };
        try {
          await fc.asyncModelRun(() => ({ model: { held: new Map() }, real }), cmds);
        } finally {
          await store.close();
        }
      }),
      { numRuns: RUNS },
    );
    console.info(`[reliability] ${name}: ${ops.count} model-checked operations in ${run} runs`);
    expect(ops.count).toBeGreaterThan(0);
  }, 1_800_000);
}
