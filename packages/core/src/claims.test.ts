import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { claimAddress } from "./claims.js";
import { delegatingStore } from "./complete-store.js";
import { IpamError, StoreUnavailableError } from "./errors.js";
import { formatIp, ipAt, parseCidr } from "./ip.js";
import { createIpam, type Ipam } from "./ipam.js";
import { type AttachmentKey, attachmentKey, formatKey } from "./key.js";
import { createMemoryStore } from "./memory-store.js";
import { withOwnClaimMemory } from "./own-claims.js";
import { parseRange } from "./range.js";
import type { IpamStore } from "./store.js";

class Crash extends IpamError {
  constructor() {
    super("STORE_UNAVAILABLE", "simulated process crash");
  }
}

/**
 * One client's view of a shared store: every call yields to the scheduler a random number of
 * times before and after it reaches the store (random interleavings), and with `crashAt` the
 * client "dies" at its n-th write: that write and everything after it never happen.
 */
function client(inner: IpamStore, rng: () => number, crashAt: number | undefined): IpamStore {
  let writes = 0;
  let dead = false;
  const pause = async () => {
    for (let n = Math.floor(rng() * 4); n > 0; n--) await new Promise<void>((r) => setImmediate(r));
  };
  const wrap =
    <A extends unknown[], R>(write: boolean, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await pause();
      if (dead) throw new Crash();
      if (write && crashAt !== undefined && ++writes >= crashAt) {
        dead = true;
        throw new Crash();
      }
      const out = await fn(...args);
      await pause();
      return out;
    };
  return delegatingStore(inner, {
    readPool: wrap(false, inner.readPool.bind(inner)),
    writePool: wrap(true, inner.writePool.bind(inner)),
    readClaim: wrap(false, inner.readClaim.bind(inner)),
    readClaims: wrap(false, inner.readClaims.bind(inner)),
    writeClaim: wrap(true, inner.writeClaim.bind(inner)),
    deleteClaim: wrap(true, inner.deleteClaim.bind(inner)),
    commit: wrap(true, inner.commit.bind(inner)),
    close: async () => {},
  });
}

/** Every reservation of every pool: its key and its pool's CIDR. */
async function heldKeys(store: IpamStore): Promise<{ key: AttachmentKey; cidr: string }[]> {
  const out: { key: AttachmentKey; cidr: string }[] = [];
  for (const ref of await store.listPools()) {
    for (const r of (await store.readPool(ref))?.pool.reservations() ?? []) out.push({ key: r.key, cidr: ref.cidr });
  }
  return out;
}

/** Every claim names the pool and key of the entry holding its address, and every entry has its claim. */
async function expectClaimsMatchPools(store: IpamStore): Promise<void> {
  const entries = new Map<string, string>();
  for (const ref of await store.listPools()) {
    for (const r of (await store.readPool(ref))?.pool.reservations() ?? []) {
      entries.set(formatIp(ipAt(parseCidr(ref.cidr), r.offset)), `${ref.cidr} ${formatKey(r.key)}`);
    }
  }
  const claims = new Map<string, string>();
  for (const ref of await store.listClaims("")) {
    const stored = await store.readClaim(ref);
    if (stored !== undefined) claims.set(ref.address, `${stored.claim.pool.cidr} ${formatKey(stored.claim.key)}`);
  }
  expect(Object.fromEntries(claims), "claims (address → pool key)").toEqual(Object.fromEntries(entries));
}

const ranges = [parseRange({ range: "10.0.0.0/28" }), parseRange({ range: "10.0.0.0/29" }), parseRange({ range: "10.0.0.4/30" })];

describe.each([
  ["separate writes (fenced protocol)", { transactions: false }, false],
  ["atomic commits (claim in the pool's transaction)", { transactions: true }, false],
  ["entry-level commits (reserve/unreserve, like etcd)", { transactions: true, entryWrites: true }, false],
  // each client a process that remembers the claims it wrote (withOwnClaimMemory, as the agent does)
  ["separate writes, clients remembering their own claims", { transactions: false }, true],
  ["atomic commits, clients remembering their own claims", { transactions: true }, true],
  ["entry-level commits, clients remembering their own claims", { transactions: true, entryWrites: true }, true],
  [
    "entry-level commits and claim batches (like etcd), clients remembering their own claims",
    { transactions: true, entryWrites: true, batchReads: true },
    true,
  ],
])("overlapping-range claims under random interleavings, crashes and same-key ADD/DEL races: %s", (_name, storeOptions, remember) => {
  it("never lets two pools hold one IP, and never blocks an IP for good", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.array(
          fc.record({
            range: fc.nat(2),
            release: fc.boolean(),
            shareKey: fc.boolean(),
            crashAt: fc.option(fc.integer({ min: 1, max: 4 }), { freq: 3, nil: undefined }),
          }),
          { minLength: 4, maxLength: 14 },
        ),
        async (seed, actors) => {
          let s = seed;
          const rng = () => {
            s = (Math.imul(s, 48271) + 11) % 2147483647;
            return (s & 0xffff) / 0x10000;
          };
          const shared = createMemoryStore(storeOptions);
          let crashed = false;
          /** Each key's first client that cannot crash: it releases what is left at the end. */
          const survivors = new Map<string, Ipam>();
          await Promise.all(
            actors.map(async (actor, n) => {
              const own = client(shared, rng, actor.crashAt);
              const ipam = createIpam({
                store: remember ? withOwnClaimMemory(own) : own,
                retry: { attempts: 500, deadlineMs: 60_000, sleep: async () => {} },
              });
              const input = {
                ranges: [ranges[actor.range] ?? ranges[0]],
                key: attachmentKey({ containerId: `a${actor.shareKey && n > 0 ? n - 1 : n}`, ifName: "eth0" }),
              };
              try {
                await ipam.allocate(input as never);
                if (actor.release) await ipam.release(input as never);
                if (actor.crashAt === undefined && !survivors.has(formatKey(input.key))) survivors.set(formatKey(input.key), ipam);
              } catch (error) {
                if (error instanceof Crash) crashed = true;
                else if (!(error instanceof IpamError && error.code === "RANGE_EXHAUSTED")) throw error;
              }
            }),
          );
          if (!crashed) {
            // No dangling claims for anyone: at quiescence every claim names exactly its entry, and every entry has its claim.
            await expectClaimsMatchPools(shared);
            // every key still held released at once, each by a client that held it: then no claim is left
            const left = await heldKeys(shared);
            await Promise.all(
              left.map(({ key, cidr }) => {
                const range = ranges.find((r) => r.cidr.text === cidr) as (typeof ranges)[number];
                const ipam = survivors.get(formatKey(key)) ?? createIpam({ store: client(shared, rng, undefined) });
                return ipam.release({ ranges: [range], key });
              }),
            );
            expect(await heldKeys(shared)).toEqual([]);
            expect(await shared.listClaims("")).toEqual([]);
          }
          // Safety: no address held by two pools.
          const holders = new Map<string, string>();
          for (const ref of await shared.listPools()) {
            const pool = (await shared.readPool(ref))?.pool;
            for (const r of pool?.reservations() ?? []) {
              const address = formatIp(ipAt(parseCidr(ref.cidr), r.offset));
              expect(holders.get(address), `${address} held by ${holders.get(address)} and ${ref.cidr}`).toBeUndefined();
              holders.set(address, ref.cidr);
            }
          }
          // Liveness: a healthy client can still fill the widest range up to its capacity minus what is held.
          const healthy = createIpam({ store: shared, retry: { sleep: async () => {} } });
          const wide = ranges[0] ?? parseRange({ range: "10.0.0.0/28" });
          const free = Number(wide.capacity) - holders.size;
          for (let n = 0; n < free; n++) {
            await healthy.allocate({ ranges: [wide], key: attachmentKey({ containerId: `fill${n}`, ifName: "eth0" }) });
          }
        },
      ),
      { numRuns: Number(process.env.IPAMKIT_PROPERTY_RUNS ?? 500) },
    );
  });
});

describe("claimAddress", () => {
  const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });
  const a = { network: "", cidr: "10.0.0.0/28" };
  const b = { network: "", cidr: "10.0.0.0/29" };
  const ref = { network: "", address: "10.0.0.3" };

  /** The memory store, logging which claim calls reach it. */
  function logged(inner: IpamStore): { store: IpamStore; calls: string[] } {
    const calls: string[] = [];
    const store = new Proxy(inner, {
      get(target, property) {
        const value = Reflect.get(target, property, target);
        if (property !== "readClaim" && property !== "writeClaim") return typeof value === "function" ? value.bind(target) : value;
        return (...args: unknown[]) => {
          calls.push(String(property));
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      },
    });
    return { store, calls };
  }

  it("claims a free address with one create-if-absent write, no read", async () => {
    const { store, calls } = logged(createMemoryStore());
    const outcome = await claimAddress(store, ref, { pool: a, key: key("c1") });
    expect(outcome).toMatchObject({ kind: "claimed", created: true });
    expect(calls).toEqual(["writeClaim"]);
    expect((await store.readClaim(ref))?.claim.pool).toEqual(a);
  });

  it("an existing claim fails the create and is inspected: taken while its pool holds the address", async () => {
    const memory = createMemoryStore();
    const ipam = createIpam({ store: memory });
    const [held] = await ipam.allocate({
      network: "",
      ranges: [parseRange({ range: b.cidr, range_start: "10.0.0.3" })],
      key: key("holder"),
    });
    expect(held === undefined ? "" : formatIp(held.address)).toBe("10.0.0.3");
    const { store, calls } = logged(memory);
    const outcome = await claimAddress(store, ref, { pool: a, key: key("c1") });
    expect(outcome).toMatchObject({ kind: "taken", by: { pool: b } });
    expect(calls).toEqual(["writeClaim", "readClaim"]);
  });
});

describe("a pool write whose outcome is unknown", () => {
  const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });
  const wide = parseRange({ range: "10.0.0.0/28" });
  const narrow = parseRange({ range: "10.0.0.0/30" });
  const ref = { network: "", cidr: wide.cidr.text };

  /** The pool write times out once: it reached the store ("landed"), or not ("lost"); `down` makes every later call fail too. */
  function flaky(shared: IpamStore, outcome: "landed" | "lost", down = false): IpamStore {
    let failed = false;
    return delegatingStore(shared, {
      async writePool(r, pool, expected) {
        if (failed && !down) return shared.writePool(r, pool, expected);
        if (failed) throw new StoreUnavailableError("still down", { outcomeUnknown: true });
        failed = true;
        if (outcome === "landed") await shared.writePool(r, pool, expected);
        throw new StoreUnavailableError("timed out", { outcomeUnknown: true });
      },
      readPool: (r) => (failed && down ? Promise.reject(new StoreUnavailableError("still down")) : shared.readPool(r)),
    });
  }

  it("is found out from the store: landed answers the ADD, lost is fenced (it can never land) and retried; one claim, naming it", async () => {
    for (const outcome of ["landed", "lost"] as const) {
      const shared = createMemoryStore();
      const ipam = createIpam({ store: flaky(shared, outcome), retry: { sleep: async () => {} } });
      const [got] = await ipam.allocate({ ranges: [wide], key: key("a") });
      const held = (await shared.readPool(ref))?.pool.forKey(key("a"));
      expect(held?.offset, outcome).toBe(got?.reservation.offset);
      const claims = await shared.listClaims("");
      expect(claims.map((c) => c.address)).toEqual([got && formatIp(got.address)]);
      expect((await shared.readClaim(claims[0] as (typeof claims)[number]))?.claim.key).toEqual(key("a"));
    }
  });

  it("where the store cannot tell, keeps the claim it created: the write may have landed, and an overlapping pool must not take the address", async () => {
    for (const outcome of ["landed", "lost"] as const) {
      const shared = createMemoryStore();
      const ipam = createIpam({ store: flaky(shared, outcome, true), retry: { sleep: async () => {} } });
      await expect(ipam.allocate({ ranges: [wide], key: key("a") })).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(await shared.listClaims("")).toHaveLength(1);
      // the runtime retries the same ADD: the same address, whichever way the write went
      const [again] = await createIpam({ store: shared, retry: { sleep: async () => {} } }).allocate({ ranges: [wide], key: key("a") });
      // an overlapping pool never gets that address
      const other = createIpam({ store: shared, retry: { sleep: async () => {} } });
      const [beside] = await other.allocate({ ranges: [narrow], key: key("b") });
      expect(again && beside && formatIp(beside.address)).not.toBe(again && formatIp(again.address));
      expect(await shared.listClaims("")).toHaveLength(2);
    }
  });
});

describe("a release of several reservations of one pool", () => {
  it("reads their claims together where the store offers readClaims, and deletes only its own", async () => {
    const memory = createMemoryStore();
    const batches: number[] = [];
    const store: IpamStore = delegatingStore(memory, {
      readClaims: (refs) => {
        batches.push(refs.length);
        return Promise.all(refs.map((r) => memory.readClaim(r)));
      },
    });
    const ipam = createIpam({ store });
    const range = parseRange({ range: "10.9.0.0/28" });
    const ref = { network: "", cidr: range.cidr.text };
    for (const id of ["a", "b", "c"]) await ipam.allocate({ ranges: [range], key: attachmentKey({ containerId: id, ifName: "eth0" }) });
    const observed = (await store.readPool(ref))?.pool.reservations() ?? [];
    // the claim of c's address now names another pool (left by a writer that crashed): not c's to delete
    const cAddress = formatIp(ipAt(range.cidr, observed[2]?.offset ?? 0n));
    const cClaim = await memory.readClaim({ network: "", address: cAddress });
    const foreign = { pool: { network: "", cidr: "10.9.0.0/24" }, key: attachmentKey({ containerId: "other", ifName: "eth0" }) };
    await memory.writeClaim({ network: "", address: cAddress }, foreign, cClaim?.version);
    expect(await ipam.releaseAllIf(ref, observed)).toEqual(["released", "released", "released"]);
    expect(batches).toEqual([3]);
    expect((await memory.listClaims("")).map((c) => c.address)).toEqual([cAddress]);
    expect((await memory.readClaim({ network: "", address: cAddress }))?.claim).toEqual(foreign);
  });
});
