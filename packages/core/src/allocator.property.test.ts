import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AllocationPolicy, allocate, release } from "./allocator.js";
import { AddressUnavailableError, RangeExhaustedError } from "./errors.js";
import { ipAt, parseIp } from "./ip.js";
import { attachmentKey, formatKey } from "./key.js";
import { Pool } from "./pool.js";
import { isAssignable, parseRange, type Range } from "./range.js";

/**
 * Model-based test: random sequences of allocate / static allocate / release over random IPv4 and
 * IPv6 ranges with excludes, checked after every step against a plain Map model.
 */
type Cmd =
  | { kind: "alloc"; k: number; policy: AllocationPolicy }
  | { kind: "static"; k: number; pick: number }
  | { kind: "release"; k: number };

const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  fc.record({
    kind: fc.constant("alloc" as const),
    k: fc.nat(40),
    policy: fc.constantFrom<AllocationPolicy>("lowest-free", "round-robin"),
  }),
  fc.record({ kind: fc.constant("static" as const), k: fc.nat(40), pick: fc.nat(1000) }),
  fc.record({ kind: fc.constant("release" as const), k: fc.nat(40) }),
);

const rangeArb: fc.Arbitrary<Range> = fc
  .record({
    v6: fc.boolean(),
    hostBits: fc.integer({ min: 3, max: 7 }),
    high: fc.bigInt({ min: 0n, max: (1n << 20n) - 1n }),
    excludes: fc.array(fc.record({ at: fc.nat(127), bits: fc.integer({ min: 0, max: 3 }) }), { maxLength: 3 }),
    gateway: fc.option(fc.nat(127), { nil: undefined }),
    trimStart: fc.nat(3),
  })
  .map(({ v6, hostBits, high, excludes, gateway, trimStart }) => {
    const bits = v6 ? 128 : 32;
    const prefix = bits - hostBits;
    const size = 1n << BigInt(hostBits);
    const network = v6 ? (0x2001_0db8n << 96n) | (high << BigInt(hostBits)) : (10n << 24n) | ((high & 0xfffn) << BigInt(hostBits));
    const text = (value: bigint) => (v6 ? fmt6(value) : fmt4(value));
    const spec = {
      range: `${text(network)}/${prefix}`,
      range_start: trimStart > 0 ? text(network + BigInt(trimStart)) : undefined,
      exclude: excludes.map((e) => {
        const eb = Math.min(e.bits, hostBits - 1);
        const start = ((BigInt(e.at) % size) >> BigInt(eb)) << BigInt(eb);
        return `${text(network + start)}/${bits - eb}`;
      }),
      gateway:
        gateway !== undefined && BigInt(gateway) % size > 0n && BigInt(gateway) % size < size - 1n
          ? text(network + (BigInt(gateway) % size))
          : undefined,
    };
    try {
      return parseRange(spec);
    } catch {
      return parseRange({ range: spec.range });
    }
  });

function fmt4(v: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((v >> s) & 0xffn)).join(".");
}
function fmt6(v: bigint): string {
  const parts: string[] = [];
  for (let s = 112n; s >= 0n; s -= 16n) parts.push(((v >> s) & 0xffffn).toString(16));
  return parts.join(":");
}

describe("allocator model", () => {
  it("never hands out an address twice or outside the usable set; releases only their own key; is idempotent", () => {
    fc.assert(
      fc.property(rangeArb, fc.array(cmdArb, { maxLength: 120 }), (range, cmds) => {
        let pool = Pool.empty(range.cidr);
        const model = new Map<string, bigint>();
        for (const cmd of cmds) {
          const key = attachmentKey({ containerId: `c${cmd.k}`, ifName: "eth0" });
          const id = formatKey(key);
          if (cmd.kind === "release") {
            const before = new Map(model);
            const r = release(pool, key);
            expect(r.released?.offset).toBe(before.get(id));
            model.delete(id);
            pool = r.pool;
          } else {
            const held = model.get(id);
            const address = cmd.kind === "static" ? fmtAddress(range, (BigInt(cmd.pick) * 7919n) % range.cidr.size) : undefined;
            try {
              const a = allocate(pool, range, { key, policy: cmd.kind === "alloc" ? cmd.policy : undefined, address });
              if (held !== undefined) {
                expect(a.reused).toBe(true);
                expect(a.reservation.offset).toBe(held);
              }
              if (address !== undefined) expect(a.address.value).toBe(parseIp(address).value);
              model.set(id, a.reservation.offset);
              pool = a.pool;
            } catch (error) {
              if (error instanceof RangeExhaustedError) {
                expect(held).toBeUndefined();
                expect(BigInt(model.size)).toBe(range.capacity);
              } else if (error instanceof AddressUnavailableError) {
                const offset = parseIp(address as string).value - range.cidr.network;
                const takenByOther = [...model.entries()].some(([k, o]) => o === offset && k !== id);
                expect(takenByOther || !isAssignable(range, offset) || (held !== undefined && held !== offset)).toBe(true);
              } else {
                throw error;
              }
            }
          }
          // invariants after every step
          const offsets = pool.reservations().map((r) => r.offset);
          expect(new Set(offsets).size).toBe(offsets.length);
          for (const o of offsets) expect(isAssignable(range, o)).toBe(true);
          expect(new Map(pool.reservations().map((r) => [formatKey(r.key), r.offset]))).toEqual(model);
        }
      }),
      { numRuns: 400 },
    );
  });
});

function fmtAddress(range: Range, offset: bigint): string {
  const ip = ipAt(range.cidr, offset);
  return range.family === 4 ? fmt4(ip.value) : fmt6(ip.value);
}
