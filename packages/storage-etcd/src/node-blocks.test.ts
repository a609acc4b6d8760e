import {
  AFFINITY_IF_NAME,
  affinityClaimRef,
  attachmentKey,
  blockLayout,
  blockPoolRef,
  blockRange,
  createNodeBlockIpam,
  delegatingStore,
  formatIp,
  IpamCache,
  type IpamStore,
  ipAt,
  isAssignable,
  nodeBlockOrder,
  parseCidr,
  parseRange,
} from "@ipamkit/core";
import { expect, inject, it } from "vitest";
import { createEtcdStore } from "./index.js";

// Per-node blocks on etcd, recalling pools (core's IpamCache, as the agent keeps one) with their own entry-level steps folded in:
// with two blocks, an ADD chooses from the recalls and fences the other block at its recalled
// version in the same transaction (core's block-ipam.ts). These cases need that recall, so they
// run here, on a real etcd.
const endpoint = inject("etcdEndpoint");
const range = parseRange({ range: "10.90.0.0/24", gateway: "10.90.0.1" });
const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });
let run = 0;

/** An etcd store whose pool reads are counted. */
function countedStore(prefix: string): { store: IpamStore; reads: string[] } {
  const inner = createEtcdStore({ endpoints: [endpoint], prefix });
  const reads: string[] = [];
  const store: IpamStore = delegatingStore(inner, {
    readPool: (ref) => {
      reads.push(ref.cidr);
      return inner.readPool(ref);
    },
  });
  return { store, reads };
}

/** Every reservation of the prefix, read by a fresh store: key → [block, address]. */
async function holdings(prefix: string): Promise<[string, string, string][]> {
  const fresh = createEtcdStore({ endpoints: [endpoint], prefix });
  try {
    const out: [string, string, string][] = [];
    for (const ref of await fresh.listPools()) {
      for (const r of (await fresh.readPool(ref))?.pool ?? [])
        out.push([r.key.containerId, ref.cidr, formatIp(ipAt(parseCidr(ref.cidr), r.offset))]);
    }
    return out;
  } finally {
    await fresh.close();
  }
}

it("with two blocks, an ADD reads no pool (its other block fenced at the recalled version); a key held behind the recall is found, never reserved twice", async () => {
  const prefix = `/node-blocks/${process.pid}-${run++}/`;
  const { store, reads } = countedStore(prefix);
  // the same node's other writer: the binary while the agent restarts, or a dead agent's last write
  const otherStore = createEtcdStore({ endpoints: [endpoint], prefix });
  try {
    const agent = createNodeBlockIpam({ store, cache: new IpamCache(), node: "node-a", blockSize: 16 });
    const other = createNodeBlockIpam({ store: otherStore, node: "node-a", blockSize: 16 });
    for (let i = 0; i < 20; i++) await agent.allocate({ ranges: [range], key: key(`c${i}`) });
    const blockOf = async (id: string) => (await holdings(prefix)).find(([k]) => k === id)?.[1];
    const [first, second] = [await blockOf("c0"), await blockOf("c19")];
    expect(second).not.toBe(first);
    reads.length = 0;
    await agent.allocate({ ranges: [range], key: key("c20") });
    expect(reads).toEqual([]);
    expect(await blockOf("c20")).toBe(second);

    // behind the agent's recall, k lands in the first block (where c0 was): the agent's choice of the
    // second block rests on "k is not in the first", so its commit fails on the fence, and it plans
    // again from fresh reads and finds k
    await other.release({ ranges: [range], key: key("c0") });
    const [k] = await other.allocate({ ranges: [range], key: key("k") });
    expect(await blockOf("k")).toBe(first);
    const conflicts = agent.conflicts.conflicts;
    const [again] = await agent.allocate({ ranges: [range], key: key("k") });
    expect(again?.reused).toBe(true);
    expect(again && formatIp(again.address)).toBe(k && formatIp(k.address));
    expect(agent.conflicts.conflicts).toBeGreaterThan(conflicts);
    const held = await holdings(prefix);
    expect(held.filter(([id]) => id === "k")).toHaveLength(1);
    expect(new Set(held.map(([, , address]) => address)).size).toBe(held.length);

    // its recalls fresh again, the next ADD reads nothing
    reads.length = 0;
    await agent.allocate({ ranges: [range], key: key("c21") });
    expect(reads).toEqual([]);
  } finally {
    await store.close();
    await otherStore.close();
  }
});

it("a restarted agent walks past the blocks other nodes took in one transaction of claim reads, then reads only its first unclaimed block's claim", async () => {
  const prefix = `/node-blocks/${process.pid}-${run++}/`;
  const raw = createEtcdStore({ endpoints: [endpoint], prefix });
  const wide = parseRange({ range: "10.91.0.0/20" }); // 256 blocks of 16
  const layout = blockLayout(wide, 16);
  const order = [...nodeBlockOrder(layout, "node-a")]
    .slice(0, 8)
    .map((index) => blockRange(layout, index))
    .filter((block) => block !== undefined);
  try {
    // node-b took the first five blocks of node-a's order
    for (const block of order.slice(0, 5)) {
      const claim = { pool: blockPoolRef("net", block), key: attachmentKey({ containerId: "node-b", ifName: AFFINITY_IF_NAME }) };
      await raw.writeClaim(affinityClaimRef("net", block), claim, undefined);
    }
    const calls: string[] = [];
    const readClaims = raw.readClaims.bind(raw);
    const counted = delegatingStore(raw, {
      readClaim: (ref, options) => {
        calls.push("readClaim");
        return raw.readClaim(ref, options);
      },
      readClaims: (refs) => {
        calls.push(`readClaims(${refs.length})`);
        return readClaims(refs);
      },
    });
    // the node-local agent's cache, started afresh
    const agent = createNodeBlockIpam({ store: counted, cache: new IpamCache(), node: "node-a", blockSize: 16 });
    await agent.allocate({ network: "net", ranges: [wide], key: key("c0") });
    // one request walks past node-b's five; after claiming the sixth, the fresh view reads the two
    // claims past it it had read but does not remember (unclaimed)
    expect(calls).toEqual(["readClaims(8)", "readClaims(2)"]);
    const ownerOf = async (n: number) => {
      const block = order[n];
      return block && (await raw.readClaim(affinityClaimRef("net", block)))?.claim.key.containerId;
    };
    const holds = async (n: number, id: string) => {
      const block = order[n];
      return block !== undefined && (await raw.readPool(blockPoolRef("net", block)))?.pool.forKey(key(id)) !== undefined;
    };
    expect(await ownerOf(5)).toBe("node-a");
    expect(await holds(5, "c0")).toBe(true);
    calls.length = 0;
    for (let i = 1; i < 20; i++) await agent.allocate({ network: "net", ranges: [wide], key: key(`c${i}`) });
    for (let i = 0; i < 20; i++) await agent.release({ network: "net", ranges: [wide], key: key(`c${i}`) });
    // an unclaimed block is never remembered (another writer of the node may claim it and place a
    // key there): each ADD reads the claims past its blocks — the 7th and 8th together until the
    // 16th ADD claims the 7th (16 calls), then the 8th alone (that ADD's fresh view after its
    // claim, and the 3 ADDs after). A DEL whose key its recalled pool holds reads no view: its
    // unreserve checks "held here". Before issue 38 the agent, as its node's "only writer", read none.
    expect(calls).toEqual([...Array.from({ length: 16 }, () => "readClaims(2)"), ...Array.from({ length: 4 }, () => "readClaim")]);
    expect(await ownerOf(6)).toBe("node-a");
    expect(await ownerOf(7)).toBeUndefined();
  } finally {
    await raw.close();
  }
});

it("two writers ADD the same key at once: the commit fences the unclaimed block its choice rested on, so the key gets one address", async () => {
  const prefix = `/node-blocks/${process.pid}-${run++}/`;
  const layout = blockLayout(range, 4);
  const stores = [0, 1, 2].map(() => createEtcdStore({ endpoints: [endpoint], prefix }));
  const [aStore, bStore, cStore] = stores as [IpamStore, IpamStore, IpamStore];
  // writer A's commit waits at a gate: its choice is made (the node's first block, one address
  // free; the next block unclaimed), its transaction not yet sent
  let reached: () => void = () => {};
  const atGate = new Promise<void>((resolve) => {
    reached = resolve;
  });
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let gated = false;
  const gatedStore = delegatingStore(aStore, {
    commit: async (writes) => {
      if (gated) {
        reached();
        await gate;
      }
      return aStore.commit(writes);
    },
  });
  try {
    const node = "node-a";
    const [a, b, c] = [gatedStore, bStore, cStore].map((store) => createNodeBlockIpam({ store, node, blockSize: 4 }));
    const first = blockRange(layout, nodeBlockOrder(layout, node).next().value as bigint);
    if (first === undefined) throw new Error("no first block");
    let room = 0;
    for (let o = first.first; o <= first.last; o++) if (isAssignable(first, o)) room += 1;
    // the node's first block with one address free
    for (let i = 0; i < room - 1; i++) await c?.allocate({ ranges: [range], key: key(`f${i}`) });
    gated = true;
    const fromA = a?.allocate({ ranges: [range], key: key("k") });
    await atGate;
    // meanwhile: the last address taken, so B finds the block full, claims the next and places k
    // there; then the address is freed again, so A's reserve alone would succeed
    await c?.allocate({ ranges: [range], key: key("x") });
    const [fromB] = (await b?.allocate({ ranges: [range], key: key("k") })) ?? [];
    expect((await holdings(prefix)).find(([id]) => id === "k")?.[1]).not.toBe(first.cidr.text);
    await c?.release({ ranges: [range], key: key("x") });
    open();
    const [answer] = (await fromA) ?? [];
    expect(answer && formatIp(answer.address)).toBe(fromB && formatIp(fromB.address));
    const held = await holdings(prefix);
    expect(held.filter(([id]) => id === "k")).toHaveLength(1);
    expect(new Set(held.map(([, , address]) => address)).size).toBe(held.length);
  } finally {
    await Promise.all(stores.map((s) => s.close()));
  }
});
