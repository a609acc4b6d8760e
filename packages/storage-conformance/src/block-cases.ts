import {
  affinityClaimRef,
  blockLayout,
  blockRange,
  createNodeBlockIpam,
  formatIp,
  type IpamStore,
  parseCidr,
  parseRange,
  type Range,
} from "@ipamkit/core";
import { expect, it } from "vitest";
import { key, type SuiteContext } from "./context.js";
import { registerSameKeyCases } from "./same-key-cases.js";

const retry = { attempts: 1000, deadlineMs: 120_000, baseDelayMs: 1, maxDelayMs: 50 };

/** The node holding the affinity claim of the block pool `cidr` (read from the store). */
async function ownerOf(store: IpamStore, range: Range, size: number, cidr: string): Promise<string | undefined> {
  const layout = blockLayout(range, size);
  const block = blockRange(layout, (parseCidr(cidr).network - range.cidr.network) / BigInt(size));
  return block === undefined ? undefined : (await store.readClaim(affinityClaimRef("", block)))?.claim.key.containerId;
}

/** Runs `each` ADDs on each of `nodes` concurrent nodes; returns the addresses per key. */
async function addOnNodes(store: IpamStore, range: Range, size: number, nodes: number, each: number): Promise<Map<string, string>> {
  const got = new Map<string, string>();
  await Promise.all(
    Array.from({ length: nodes }, async (_, n) => {
      const ipam = createNodeBlockIpam({ store, node: `node-${n}`, blockSize: size, retry });
      for (let i = 0; i < each; i++) {
        const [a] = await ipam.allocate({ ranges: [range], key: key(`n${n}-p${i}`) });
        if (a !== undefined) got.set(`n${n}-p${i}`, formatIp(a.address));
      }
    }),
  );
  return got;
}

export function registerBlockCases(ctx: SuiteContext): void {
  it("per-node blocks: concurrent nodes write only blocks they claimed; all distinct; released by exact key", async () => {
    const s = ctx.store();
    const range = parseRange({ range: "10.60.0.0/24" });
    const got = await addOnNodes(s, range, 16, 4, 10);
    expect(new Set(got.values()).size).toBe(40);
    const pools = (await s.listPools()).filter((p) => p.cidr.startsWith("10.60."));
    for (const ref of pools) {
      const owner = await ownerOf(s, range, 16, ref.cidr);
      for (const r of (await s.readPool(ref))?.pool ?? []) expect(r.key.containerId.startsWith(`n${owner?.slice(5)}-`)).toBe(true);
    }
    for (let n = 0; n < 4; n++) {
      const ipam = createNodeBlockIpam({ store: s, node: `node-${n}`, blockSize: 16, retry });
      for (let i = 0; i < 10; i++) expect(await ipam.release({ ranges: [range], key: key(`n${n}-p${i}`) })).toHaveLength(1);
    }
    for (const ref of pools) expect((await s.readPool(ref))?.pool.size).toBe(0);
  });

  it("per-node blocks: nodes racing for the last blocks and borrowing never hold an address twice; every key is found", async () => {
    const s = ctx.store();
    const range = parseRange({ range: "10.61.0.0/27" }); // 4 blocks of 8, 30 usable addresses
    const got = await addOnNodes(s, range, 8, 3, 9);
    expect(got.size).toBe(27);
    expect(new Set(got.values()).size).toBe(27);
    for (let n = 0; n < 3; n++) {
      const ipam = createNodeBlockIpam({ store: s, node: `node-${n}`, blockSize: 8, retry });
      for (let i = 0; i < 9; i++) {
        const [found] = await ipam.lookup({ ranges: [range], key: key(`n${n}-p${i}`) });
        expect(found === undefined ? undefined : formatIp(found.address)).toBe(got.get(`n${n}-p${i}`));
      }
    }
  });
  registerSameKeyCases(ctx);
}
