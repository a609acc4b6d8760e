import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allocate, release } from "./allocator.js";
import { delegatingStore } from "./complete-store.js";
import { createIpam } from "./ipam.js";
import { type AttachmentKey, attachmentKey, formatKey, isLegacyKey } from "./key.js";
import { createMemoryStore, type MemoryStoreOptions } from "./memory-store.js";
import { Pool } from "./pool.js";
import { parseRange } from "./range.js";
import type { Reservation } from "./reservation.js";
import type { IpamStore } from "./store.js";

/**
 * Pools Whereabouts < 0.8 left behind (several entries without ifname per container id) under
 * interleaved ADD/DEL by exact keys of those containers. After every step: no exact key holds two
 * addresses, no address is held by two keys, an ADD of a container that still has a legacy entry
 * adopts it instead of taking a new address, and a DEL frees what the key's ADD got.
 */

const range = parseRange({ range: "10.0.0.0/26" });
const CONTAINERS = ["c0", "c1", "c2"];
const IFACES = ["net1", "net2", "net3"];
const keyOf = (c: number, i: number) => attachmentKey({ containerId: CONTAINERS[c] as string, ifName: IFACES[i] as string });

/** Legacy entries: per container 0..3, at distinct offsets. */
const seedArb = fc
  .uniqueArray(fc.integer({ min: 1, max: 40 }), { minLength: 0, maxLength: 9 })
  .chain((offsets) =>
    fc.tuple(fc.constant(offsets), fc.array(fc.nat(CONTAINERS.length - 1), { minLength: offsets.length, maxLength: offsets.length })),
  )
  .map(([offsets, owners]) =>
    offsets.map(
      (o, i): Reservation => ({
        offset: BigInt(o),
        key: attachmentKey({ containerId: CONTAINERS[owners[i] as number] as string, ifName: "" }, { allowLegacy: true }),
        podRef: "ns/old",
      }),
    ),
  );

type Op = { add: boolean; c: number; i: number };
const opArb: fc.Arbitrary<Op> = fc.record({ add: fc.boolean(), c: fc.nat(CONTAINERS.length - 1), i: fc.nat(IFACES.length - 1) });

/**
 * Every invariant a pool must hold; also that it re-reads as itself (no key twice, no address
 * twice). Legacy entries only ever go away, so a container that still has one never had a new
 * address allocated: each of its exact entries sits where one of its legacy entries was.
 */
function checkPool(pool: Pool, seed: readonly Reservation[]): void {
  const again = Pool.fromReservations(pool.cidr, pool.reservations());
  const exactKeys = new Set<string>();
  for (const r of again) {
    if (isLegacyKey(r.key)) continue;
    expect(exactKeys.has(formatKey(r.key)), `${formatKey(r.key)} holds two addresses`).toBe(false);
    exactKeys.add(formatKey(r.key));
    if (pool.legacyOf(r.key.containerId).length === 0) continue;
    const was = seed.find((l) => l.offset === r.offset);
    expect(was?.key.containerId, `${formatKey(r.key)} got a new address while its container had a legacy entry`).toBe(r.key.containerId);
  }
}

describe("legacy entries under interleaved ADD/DEL (pure allocator)", () => {
  it("never two addresses for one exact key, never one address for two keys; legacy adopted before allocating", () => {
    fc.assert(
      fc.property(seedArb, fc.array(opArb, { maxLength: 60 }), (seed, ops) => {
        let pool = Pool.fromReservations(range.cidr, seed);
        /** What each exact key's last ADD got (removed by its DEL). */
        const held = new Map<string, bigint>();
        for (const op of ops) {
          const key = keyOf(op.c, op.i);
          const text = formatKey(key);
          const before = pool;
          const legacyBefore = before.legacyOf(key.containerId);
          if (op.add) {
            const a = allocate(pool, range, { key });
            pool = a.pool;
            const had = held.get(text);
            if (had !== undefined) expect(a.reservation.offset).toBe(had);
            else if (legacyBefore.length > 0) {
              expect(a.reservation.offset, "adopts the lowest legacy entry").toBe(legacyBefore[0]?.offset);
              expect(pool.size).toBe(before.size);
            } else expect(pool.size).toBe(before.size + 1);
            held.set(text, a.reservation.offset);
          } else {
            const r = release(pool, key);
            pool = r.pool;
            const had = held.get(text);
            if (had !== undefined) expect(r.released?.offset, "DEL frees what the key's ADD got").toBe(had);
            else expect(r.released?.offset).toBe(legacyBefore[0]?.offset);
            held.delete(text);
          }
          checkPool(pool, seed);
          // every live key holds exactly what it was given, and no two keys share an address
          for (const [t, offset] of held) expect(formatKey(pool.atOffset(offset)?.key as AttachmentKey)).toBe(t);
          expect(new Set(held.values()).size).toBe(held.size);
        }
      }),
      { numRuns: 300 },
    );
  });
});

/** Yields to the event loop a random number of times before each store call, so calls interleave. */
function jittered(store: IpamStore, random: () => number): IpamStore {
  const pause = async () => {
    for (let n = Math.floor(random() * 4); n > 0; n--) await new Promise((r) => setImmediate(r));
  };
  return delegatingStore(store, {
    readPool: async (ref) => {
      await pause();
      return store.readPool(ref);
    },
    writePool: async (ref, pool, expected) => {
      await pause();
      return store.writePool(ref, pool, expected);
    },
  });
}

const variants: [string, MemoryStoreOptions][] = [
  ["plain", {}],
  ["entry-level writes", { transactions: true, entryWrites: true }],
];

for (const [name, options] of variants) {
  describe(`legacy entries under concurrent ADD/DEL through Ipam (memory store, ${name})`, () => {
    it("each exact key ends holding what its last ADD answered, once; no address twice", async () => {
      await fc.assert(
        fc.asyncProperty(
          seedArb,
          fc.array(fc.array(fc.boolean(), { maxLength: 5 }), { minLength: 9, maxLength: 9 }),
          fc.integer({ min: 1, max: 2 ** 31 }),
          async (seed, lanes, rngSeed) => {
            let s = rngSeed;
            const random = () => {
              s = (s * 1103515245 + 12345) % 2 ** 31;
              return s / 2 ** 31;
            };
            const memory = createMemoryStore(options);
            const ref = { network: "", cidr: range.cidr.text };
            await memory.writePool(ref, Pool.fromReservations(range.cidr, seed), undefined);
            const ipam = createIpam({ store: jittered(memory, random), retry: { attempts: 1000, baseDelayMs: 0, maxDelayMs: 0 } });
            // one lane per exact key (its calls in order), all lanes at once: containers' lanes race for their legacy entries
            const last = await Promise.all(
              lanes.map(async (adds, lane) => {
                const key = keyOf(lane % 3, Math.floor(lane / 3));
                let got: bigint | undefined;
                for (const add of adds) {
                  if (add) got = (await ipam.allocate({ ranges: [range], key }))[0]?.reservation.offset;
                  else {
                    await ipam.release({ ranges: [range], key });
                    got = undefined;
                  }
                }
                return { key, got };
              }),
            );
            const pool = (await memory.readPool(ref))?.pool ?? Pool.empty(range.cidr);
            checkPool(pool, seed);
            for (const { key, got } of last) expect(pool.exactly(key)?.offset, formatKey(key)).toBe(got);
          },
        ),
        { numRuns: 60 },
      );
    });
  });
}
