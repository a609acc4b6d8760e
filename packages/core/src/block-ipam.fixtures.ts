/** Test helpers shared by block-ipam.test.ts and block-ipam.recall.test.ts (not part of the package's API). */
import { formatIp, parseCidr } from "./ip.js";
import { attachmentKey, formatKey } from "./key.js";
import { createMemoryStore, type MemoryStoreOptions } from "./memory-store.js";
import { affinityClaimRef, blockLayout, blockRange } from "./node-blocks.js";
import type { Range } from "./range.js";
import type { IpamStore } from "./store.js";

/** The memory store offering what etcd's does: entry-level commits and several claims read in one request. */
export const ETCD_LIKE: MemoryStoreOptions = { transactions: true, entryWrites: true, batchReads: true };

export const key = (id: string, ifName = "net1") => attachmentKey({ containerId: id, ifName });

/** Every stored reservation, read straight from the store: address → [pool, key]. */
export async function holdings(store: IpamStore): Promise<{ address: string; pool: string; key: string }[]> {
  const out: { address: string; pool: string; key: string }[] = [];
  for (const ref of await store.listPools()) {
    const stored = await store.readPool(ref);
    const cidr = parseCidr(ref.cidr);
    for (const r of stored?.pool ?? []) {
      out.push({ address: formatIp({ family: cidr.family, value: cidr.network + r.offset }), pool: ref.cidr, key: formatKey(r.key) });
    }
  }
  return out;
}

/** The node whose affinity claim covers a block pool. */
export async function ownerOf(store: IpamStore, network: string, range: Range, blockCidr: string): Promise<string | undefined> {
  const layout = blockLayout(range, 16);
  const block = blockRange(layout, (parseCidr(blockCidr).network - range.cidr.network) / 16n);
  if (block === undefined) return undefined;
  return (await store.readClaim(affinityClaimRef(network, block)))?.claim.key.containerId;
}

/** The memory store, counting reads per pool; `onRead` runs after a read, before it is returned. */
export function countingStore(onRead?: (ref: { cidr: string }) => Promise<void>, options: MemoryStoreOptions = {}) {
  const inner = createMemoryStore(options);
  const reads: string[] = [];
  const store: IpamStore = new Proxy(inner, {
    get(target, property) {
      if (property !== "readPool") return Reflect.get(target, property, target);
      return async (ref: { network: string; cidr: string }) => {
        const stored = await target.readPool(ref);
        reads.push(ref.cidr);
        await onRead?.(ref);
        return stored;
      };
    },
  });
  return { inner, store, reads };
}
