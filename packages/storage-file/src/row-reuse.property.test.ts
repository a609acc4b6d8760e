import { attachmentKey, Pool, parseCidr, type Reservation } from "@ipamkit/core";
import fc from "fast-check";
import { expect, it } from "vitest";
import { makeTempDir } from "./fixtures/temp-dir.js";
import { createFileStore } from "./index.js";

// Every step is a fresh store instance (a fresh CNI process): it reads the pool (re-using the
// file's row lines) and writes a changed pool. The pool read back must always equal the model.
const cidr = parseCidr("10.90.0.0/24");
const ref = { network: "", cidr: cidr.text };

it("re-used row lines never lose, duplicate or alter a reservation, even with awkward strings", async () => {
  const text = fc.string({ unit: fc.constantFrom("a", "/", "\n", '"', "}", ",", "{", "\\", "é", " ", "]"), maxLength: 12 });
  const step = fc.record({
    add: fc.boolean(),
    offset: fc.integer({ min: 1, max: 40 }),
    id: fc.nat(30),
    podRef: text,
    extra: fc.option(text, { nil: undefined }),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 20 }), async (steps) => {
      const tmp = await makeTempDir();
      const model = new Map<bigint, Reservation>();
      try {
        for (const s of steps) {
          const store = createFileStore({ dir: tmp.store });
          const stored = await store.readPool(ref);
          let pool = stored?.pool ?? Pool.empty(cidr);
          const offset = BigInt(s.offset);
          const key = attachmentKey({ containerId: `c${s.id}`, ifName: "eth0" });
          if (s.add && pool.atOffset(offset) === undefined && pool.forKey(key) === undefined) {
            const r: Reservation = { offset, key, podRef: s.podRef, ...(s.extra === undefined ? {} : { extra: { note: s.extra } }) };
            pool = pool.with(r);
            model.set(offset, r);
          } else if (!s.add && pool.atOffset(offset) !== undefined) {
            const held = pool.atOffset(offset) as Reservation;
            pool = pool.without(held.key);
            model.delete(offset);
          }
          await store.writePool(ref, pool, stored?.version);
          await store.close();
          const fresh = createFileStore({ dir: tmp.store });
          const read = (await fresh.readPool(ref))?.pool;
          await fresh.close();
          expect(read?.reservations()).toEqual([...model.values()].sort((a, b) => (a.offset < b.offset ? -1 : 1)));
        }
      } finally {
        await tmp.remove();
      }
    }),
    { numRuns: Number(process.env.IPAMKIT_PROPERTY_RUNS ?? 60) },
  );
});
