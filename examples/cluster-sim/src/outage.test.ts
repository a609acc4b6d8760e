import { expect, it } from "vitest";
import { audit, type Held, readEtcd, readIpPools } from "./audit.js";
import { type Cluster, POOL_NAMESPACE, startCluster } from "./cluster.js";
import { limited, runCni } from "./cni.js";

// Store outages under load (RELIABILITY.md): etcd SIGKILLed and restarted while ADDs run through the
// node-local agents, and the Kubernetes test API server restarted. A call that meets the outage
// answers code 11 (try again later) and the runtime retries it, as kubelet does.
const PODS = process.env.RELIABILITY === "full" ? 400 : 60;
const NETWORK = "net-1";

function conf(cluster: Cluster, node: number): string {
  const sim = cluster.nodes[node % cluster.nodes.length];
  if (sim === undefined) throw new Error("no node");
  return JSON.stringify({
    cniVersion: "1.1.0",
    name: "outage-net",
    type: "macvlan",
    ipam: { type: "ipamkit", range: "10.95.0.0/22", network_name: NETWORK, ...cluster.ipam(sim) },
  });
}

/** ADD as a runtime does it: code 11 means "try again later" — retried until it succeeds (or 90 s pass). */
async function addUntilDone(cluster: Cluster, i: number, codes: number[]): Promise<string> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const outcome = await runCni({
      command: "ADD",
      containerId: `oc-${i}`,
      ifName: "net1",
      pod: { namespace: "outage", name: `op-${i}`, uid: `uid-${i}` },
      conf: conf(cluster, i),
    });
    if (outcome.code === 0 && outcome.ip !== undefined) return outcome.ip;
    const code = Number((JSON.parse(outcome.error ?? "{}") as { code?: number }).code);
    codes.push(code);
    if (code !== 11 || Date.now() > deadline) throw new Error(`ADD oc-${i}: ${outcome.error}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

function liveFrom(acknowledged: Map<number, string>): Held[] {
  return [...acknowledged].map(([i, address]) => ({ network: NETWORK, address, containerId: `oc-${i}`, ifName: "net1" }));
}

it(`etcd SIGKILLed and restarted during ${PODS} ADDs through the agents: every ADD lands once, nothing held twice or lost`, async () => {
  const cluster = await startCluster("etcd", 4);
  try {
    await cluster.startAgents(4);
    const acknowledged = new Map<number, string>();
    const codes: number[] = [];
    const outage = (async () => {
      while (acknowledged.size < PODS / 3) await new Promise((r) => setTimeout(r, 20));
      await cluster.etcd?.kill();
      await new Promise((r) => setTimeout(r, 2000));
      await cluster.etcd?.restart();
    })();
    await limited(
      4,
      Array.from({ length: PODS }, (_, i) => async () => {
        acknowledged.set(i, await addUntilDone(cluster, i, codes));
      }),
    );
    await outage;
    const held = (await readEtcd(cluster.etcd?.endpoint ?? "")).filter((h) => h.network === NETWORK);
    console.info(`[reliability] etcd outage: ${PODS} ADDs, ${codes.length} answered try-again-later (codes ${[...new Set(codes)]})`);
    expect(codes.length).toBeGreaterThan(0); // the outage was met
    expect(new Set(codes)).toEqual(new Set([11]));
    // every attachment holds exactly its acknowledged address: a retried ADD whose first try was
    // committed before etcd died got the same address back (idempotent), never a second one
    expect(audit(held, liveFrom(acknowledged))).toEqual({ heldTwice: 0, lost: 0, leaked: 0 });
    expect(held).toHaveLength(PODS);
  } finally {
    await cluster.close();
  }
}, 300_000);

it("the Kubernetes test API server restarted under the agents: its state is lost (it keeps none on disk), the agents carry on", async () => {
  const cluster = await startCluster("kubernetes", 2);
  try {
    await cluster.startAgents(2);
    const before = new Map<number, string>();
    const codes: number[] = [];
    for (let i = 0; i < 10; i++) before.set(i, await addUntilDone(cluster, i, codes));
    await cluster.restartApiServer();
    const after = new Map<number, string>();
    await limited(
      4,
      Array.from({ length: 20 }, (_, k) => async () => {
        after.set(10 + k, await addUntilDone(cluster, 10 + k, codes));
      }),
    );
    const held = (await readIpPools(cluster.kubeConfig, POOL_NAMESPACE)).filter((h) => h.network === NETWORK);
    // The stand-in's objects lived in its memory: the pre-restart reservations are gone (a real
    // kube-apiserver keeps them in etcd). What the agents wrote since is whole and unique.
    expect(audit(held, liveFrom(after))).toEqual({ heldTwice: 0, lost: 0, leaked: 0 });
    expect(held.some((h) => h.containerId === "oc-0")).toBe(false);
  } finally {
    await cluster.close();
  }
}, 300_000);
