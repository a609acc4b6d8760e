import {
  type AttachmentKey,
  attachmentKey,
  createIpam,
  createNodeBlockIpam,
  formatIp,
  formatKey,
  type IpamStore,
  ipAt,
  isAffinityNetwork,
  parseCidr,
  parseRange,
  type Range,
  type RetryOptions,
  scanClaimsOf,
} from "@ipamkit/core";
import { binaryPaths, type KubeApiserver, startKubeApiserver, TEST_TOKEN } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ResetProxy, startResetProxy } from "../test/reset-proxy.js";
import { createKubernetesStore } from "./index.js";

/**
 * A write whose answer never arrives: the server applied it, then the connection was reset (a TCP
 * RST from a proxy in front of a real kube-apiserver, after the server answered). The store sends
 * it again, which the server refuses as stale (409, or 404 for a delete): whether the first was
 * applied is unknown to the store. Every ADD and DEL here is idempotent by its key, so core finds
 * out by reading again — the call succeeds, with the address the server recorded, and leaves
 * nothing behind. Each write of each flow is reset in turn.
 */

/** What CNI calls run with (packages/cni CNI_RETRY), deadline shortened for a test. */
const RETRY: RetryOptions = { attempts: 100_000, deadlineMs: 30_000, baseDelayMs: 2, maxDelayMs: 200 };

const wide = parseRange({ range: "10.60.0.0/28" });
const narrow = parseRange({ range: "10.60.0.0/29" });
const k1 = attachmentKey({ containerId: "c1", ifName: "eth0" });
const k2 = attachmentKey({ containerId: "c2", ifName: "eth0" });

interface Held {
  pool: string;
  address: string;
  key: string;
}

/** Every reservation and every claim in the namespace, read directly (not through the proxy). */
async function stateOf(store: IpamStore): Promise<{ held: Held[]; claims: { address: string; network: string; names: Held }[] }> {
  const held: Held[] = [];
  const networks = new Set<string>();
  for (const ref of await store.listPools()) {
    networks.add(ref.network);
    const stored = await store.readPool(ref);
    const cidr = parseCidr(ref.cidr);
    for (const r of stored?.pool ?? []) held.push({ pool: ref.cidr, address: formatIp(ipAt(cidr, r.offset)), key: formatKey(r.key) });
  }
  const all = [...networks].flatMap((n) => [n, n === "" ? "node-blocks" : `${n}-node-blocks`]);
  const claims = (await scanClaimsOf(store, all)).map(({ ref, stored }) => ({
    address: ref.address,
    network: ref.network,
    names: { pool: stored.claim.pool.cidr, address: ref.address, key: formatKey(stored.claim.key) },
  }));
  return { held, claims };
}

/** No address held twice, no key with two addresses, every address claim naming exactly its holder, none left unheld. */
function expectConsistent(state: Awaited<ReturnType<typeof stateOf>>, protect: boolean): void {
  const byAddress = new Map<string, Held[]>();
  const byKey = new Map<string, Held[]>();
  for (const h of state.held) {
    byAddress.set(h.address, [...(byAddress.get(h.address) ?? []), h]);
    byKey.set(h.key, [...(byKey.get(h.key) ?? []), h]);
  }
  for (const [address, holders] of byAddress) expect(holders, `address ${address} held twice`).toHaveLength(1);
  for (const [key, holders] of byKey) expect(holders, `key ${key} holds two addresses`).toHaveLength(1);
  const addressClaims = state.claims.filter((c) => !isAffinityNetwork(c.network));
  for (const claim of addressClaims) expect(byAddress.get(claim.address), `claim of ${claim.address} left behind`).toEqual([claim.names]);
  if (protect) for (const h of state.held) expect(addressClaims.map((c) => c.names)).toContainEqual(h);
}

type Step = { add: AttachmentKey; range: Range } | { del: AttachmentKey; range: Range };

/** An IPAM over `store`: the whole-range one, or per-node blocks of 4. */
type Flavour = "ranges" | "node blocks";
const ipamOver = (store: IpamStore, flavour: Flavour) =>
  flavour === "ranges"
    ? createIpam({ store, retry: { ...RETRY } })
    : createNodeBlockIpam({ store, retry: { ...RETRY }, node: "node-a", blockSize: 4 });

const FLOWS: Record<Flavour, Step[]> = {
  // two overlapping ranges: every ADD claims its address (OverlappingRangeIPReservation), every DEL drops it
  ranges: [
    { add: k1, range: wide },
    { add: k2, range: narrow },
    { del: k1, range: wide },
    { add: k1, range: narrow },
    { del: k2, range: narrow },
    { del: k1, range: narrow },
  ],
  // block claims (affinity), block pools, the addresses' claims
  "node blocks": [
    { add: k1, range: wide },
    { add: k2, range: wide },
    { del: k1, range: wide },
    { del: k2, range: wide },
  ],
};

describe(`writes of unknown outcome on kube-apiserver ${binaryPaths().kubernetesVersion}`, () => {
  let server: KubeApiserver;
  let proxy: ResetProxy;
  let seq = 0;

  beforeAll(async () => {
    server = await startKubeApiserver();
    proxy = await startResetProxy({ url: server.url, ca: server.ca });
  }, 120_000);
  afterAll(async () => {
    await proxy?.close();
    await server?.stop();
  });

  /** A fresh namespace, a store in it through the proxy, and one read directly. */
  async function fresh(): Promise<{ through: IpamStore; direct: IpamStore }> {
    const namespace = `unknown-${process.pid}-${seq++}`;
    await server.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    const viaProxy = new KubeConfig();
    viaProxy.loadFromOptions({
      clusters: [{ name: "proxy", server: proxy.url, caData: Buffer.from(proxy.ca).toString("base64") }],
      users: [{ name: "admin", token: TEST_TOKEN }],
      contexts: [{ name: "proxy", cluster: "proxy", user: "admin" }],
      currentContext: "proxy",
    });
    return {
      through: createKubernetesStore({ kubeconfig: viaProxy, namespace }),
      direct: createKubernetesStore({ kubeconfig: server.kubeConfig, namespace }),
    };
  }

  /** Runs a flow; after each ADD the address answered is the one the server recorded for the key. Returns the unknown outcomes met. */
  async function run(flavour: Flavour): Promise<number> {
    const { through, direct } = await fresh();
    const ipam = ipamOver(through, flavour);
    try {
      for (const step of FLOWS[flavour]) {
        if ("add" in step) {
          const [assigned] = await ipam.allocate({ ranges: [step.range], key: step.add, podRef: "ns/pod" });
          const state = await stateOf(direct);
          const recorded = state.held.filter((h) => h.key === formatKey(step.add));
          expect(recorded.map((h) => h.address)).toEqual([formatIp(assigned?.address as NonNullable<typeof assigned>["address"])]);
          expectConsistent(state, true);
        } else {
          await ipam.release({ ranges: [step.range], key: step.del });
          const state = await stateOf(direct);
          expect(state.held.filter((h) => h.key === formatKey(step.del))).toEqual([]);
          expectConsistent(state, true);
        }
      }
      const end = await stateOf(direct);
      expect(end.held).toEqual([]);
      expect(end.claims.filter((c) => !isAffinityNetwork(c.network))).toEqual([]);
      return ipam.conflicts.unknownOutcomes ?? 0;
    } finally {
      await through.close?.();
      await direct.close?.();
    }
  }

  for (const flavour of ["ranges", "node blocks"] as const) {
    it(`${flavour}: every write of ADD and DEL reset after the server applied it, in turn — each call succeeds, nothing twice, nothing left`, async () => {
      // a clean run counts the flow's writes
      proxy.resetWhen = () => false;
      const before = proxy.requests.length;
      expect(await run(flavour)).toBe(0);
      const writes = proxy.requests.slice(before).filter((r) => r.write).length;
      expect(writes).toBeGreaterThan(FLOWS[flavour].length);
      const swallowedBefore = proxy.swallowed.length;
      for (let n = 1; n <= writes; n++) {
        const target = proxy.requests.filter((r) => r.write).length + n;
        proxy.resetWhen = (r) => r.writeNumber === target;
        const swallowed = proxy.swallowed.length;
        // core met the unknown outcome (the store sent the write again, and it was refused as stale) and found it out
        await expect(run(flavour), `reset of write ${n} of ${writes}`).resolves.toBeGreaterThanOrEqual(1);
        // exactly that write was answered by the server, and its answer swallowed
        expect(proxy.swallowed.slice(swallowed)).toEqual([expect.stringMatching(/^HTTP\/1\.1 \d{3} /)]);
      }
      // most were applied (200/201); the others were refused (409: a claim's create-if-absent that
      // meets a claim is part of the protocol), and their outcome is just as unknown to the store
      const statuses = proxy.swallowed.slice(swallowedBefore);
      expect(statuses.filter((s) => /^HTTP\/1\.1 20[01] /.test(s)).length).toBeGreaterThan(writes / 2);
    }, 300_000);
  }
});
