import { join } from "node:path";
import type { IpamStore } from "@ipamkit/core";
import { reconcileOnce } from "@ipamkit/reconciler";
import { createKubernetesPodSource } from "@ipamkit/storage-kubernetes";
import { type Held, readEtcd, readFileStore, readIpPools } from "./audit.js";
import { type Cluster, POOL_NAMESPACE } from "./cluster.js";
import { limited } from "./cni.js";
import { type Attachment, addressesOf, KillWindow, NS, run } from "./kill-process.js";

/**
 * The SIGKILL campaign (RELIABILITY.md): CNI processes in direct mode (the process itself does the
 * store work) killed at random moments during ADD and DEL, 4 at a time, on a network with two
 * overlapping ranges (so claims and pools are written separately on stores without transactions).
 * Afterwards the store must read cleanly, hold no address twice and keep every acknowledged
 * attachment; the worst allowed outcome — a reservation of a dead attachment — is then freed by CNI
 * GC (file store) or by the reconciler (shared stores).
 */
export interface KillCampaignResult {
  /** Processes that died of the SIGKILL (the others finished first). */
  killed: number;
  killedAdds: number;
  killedDels: number;
  /**
   * Where the killed ADDs stood, read from the store before the cleanup: none of the attachment's two
   * addresses written yet, one of them (killed between the overlapping ranges), or both (killed
   * before answering). Killed DELs likewise: both still held, one released, both released.
   */
  addKills: { untouched: number; partial: number; written: number };
  delKills: { untouched: number; partial: number; released: number };
  /** Attachments whose ADD was acknowledged and never deleted. */
  live: number;
  /** Reservations held for dead attachments before the cleanup (allowed), and after it (must be 0). */
  deadHeldBefore: number;
  deadHeldAfter: number;
  heldTwice: number;
  /** Live attachments missing an address. */
  lost: number;
  /** Pools the ipamkit store could not read back. */
  unreadable: number;
  /** What freed the dead attachments' reservations. */
  cleanup: "gc" | "reconciler";
  released: number;
}

const NETWORK = "net-1";
/** CNI processes at once. */
const CONCURRENCY = 4;
/** Addresses per attachment: one from each of the config's two overlapping ranges. */
const ADDRESSES = 2;
export interface KillCampaignOptions {
  /** SIGKILLs to aim for (some processes finish before their kill). */
  kills: number;
  /** The store the cleanup and the clean-read check use (same backend as the cluster). */
  store: IpamStore;
  random?: () => number;
}

/** One campaign's state: its cluster, the network it attaches to, every attachment so far, the kills. */
interface Campaign {
  cluster: Cluster;
  /** The network configuration every call gets (the store's keys, no agent). */
  conf: string;
  attachments: Attachment[];
  window: KillWindow;
  random: () => number;
  kills: { killed: number; killedAdds: number; killedDels: number };
}

/** The campaign's network: two overlapping ranges, the cluster's store keys, direct mode (no agent). */
function campaignConf(cluster: Cluster): string {
  // a node without an agent: its flat file names none
  const storeKeys = {
    ...cluster.ipam(cluster.nodes[0] ?? { name: "n", socket: "", configurationPath: "", agent: undefined }),
    configuration_path: cluster.directNode,
  };
  return JSON.stringify({
    cniVersion: "1.1.0",
    name: "kill-net",
    type: "macvlan",
    ipam: { type: "ipamkit", range: "10.90.0.0/23", ipRanges: [{ range: "10.90.1.0/24" }], network_name: NETWORK, ...storeKeys },
  });
}

// Every attachment's pod is an object in the API server before its ADD (its UID goes into
// CNI_ARGS, as kubelet passes it); a dead attachment's pod is deleted, a live one's is Running.
async function fresh(c: Campaign): Promise<Attachment> {
  const a: Attachment = { id: c.attachments.length, uid: "", state: "pending" };
  c.attachments.push(a);
  const pod = await c.cluster.core.createNamespacedPod({
    namespace: NS,
    body: {
      metadata: { name: `kp-${a.id}` },
      spec: { nodeName: "node-0", containers: [{ name: "app", image: "registry.example/app:1" }] },
    },
  });
  a.uid = pod.metadata?.uid ?? "";
  return a;
}

const bury = (c: Campaign, a: Attachment) =>
  c.cluster.core.deleteNamespacedPod({ namespace: NS, name: `kp-${a.id}`, gracePeriodSeconds: 0 });

/** An uncut ADD of a new attachment; its milliseconds. */
async function addLive(c: Campaign): Promise<number> {
  const a = await fresh(c);
  const r = await run("ADD", a, c.conf, undefined);
  if (r.code !== 0) throw new Error(`ADD kc-${a.id} failed: ${r.out}`);
  a.ips = addressesOf(r.out);
  a.state = "live";
  return r.ms;
}

/** An ADD of a new attachment, killed at a moment drawn from the window unless it finishes first. */
async function killAdd(c: Campaign): Promise<void> {
  const a = await fresh(c);
  const r = await run("ADD", a, c.conf, c.window.draw("ADD", c.random));
  if (r.killed) {
    a.state = "dead";
    a.killedIn = "ADD";
    await bury(c, a);
    c.kills.killed++;
    c.kills.killedAdds++;
  } else if (r.code === 0) {
    c.window.record("ADD", r.ms);
    a.ips = addressesOf(r.out);
    a.state = "live";
  } else throw new Error(`ADD kc-${a.id} answered ${r.out}`);
}

/** A live attachment's pod goes away and its DEL is killed likewise; with no victim drawn, an uncut ADD instead. */
async function killDel(c: Campaign): Promise<void> {
  const victim = c.attachments.find((a) => a.state === "live" && a.id >= CONCURRENCY && c.random() < 0.5);
  if (victim === undefined) {
    c.window.record("ADD", await addLive(c));
    return;
  }
  victim.state = "dead"; // its pod is going away, whatever the DEL manages
  await bury(c, victim);
  const r = await run("DEL", victim, c.conf, c.window.draw("DEL", c.random));
  if (r.killed) {
    victim.killedIn = "DEL";
    c.kills.killed++;
    c.kills.killedDels++;
  } else if (r.code === 0) c.window.record("DEL", r.ms);
  else throw new Error(`DEL kc-${victim.id} answered ${r.out}`);
}

/** The store after the kills, against what the campaign knows of every attachment. */
interface Inspection extends Pick<KillCampaignResult, "lost" | "deadHeldBefore" | "addKills" | "delKills" | "heldTwice"> {
  live: Attachment[];
  /** Reservations held for dead attachments in a later read of the store. */
  deadHeld(now: Held[]): number;
}

/** What the store holds after the kills, against what the campaign knows of every attachment. */
function inspect(c: Campaign, held: Held[]): Inspection {
  const byId = new Map(c.attachments.map((a) => [`kc-${a.id}`, a]));
  const addresses = held.map((h) => h.address);
  const live = c.attachments.filter((a) => a.state === "live");
  const liveHeld = new Set(held.filter((h) => byId.get(h.containerId)?.state === "live").map((h) => `${h.containerId}|${h.address}`));
  const lost = live.reduce((n, a) => n + (a.ips ?? []).filter((ip) => !liveHeld.has(`kc-${a.id}|${ip}`)).length, 0);
  const deadHeldBefore = held.filter((h) => byId.get(h.containerId)?.state !== "live").length;
  const heldBy = new Map<string, number>();
  for (const h of held) heldBy.set(h.containerId, (heldBy.get(h.containerId) ?? 0) + 1);
  const addKills = { untouched: 0, partial: 0, written: 0 };
  const delKills = { untouched: 0, partial: 0, released: 0 };
  for (const a of c.attachments) {
    const n = heldBy.get(`kc-${a.id}`) ?? 0;
    if (a.killedIn === "ADD") addKills[n === 0 ? "untouched" : n < ADDRESSES ? "partial" : "written"]++;
    if (a.killedIn === "DEL") delKills[n === ADDRESSES ? "untouched" : n > 0 ? "partial" : "released"]++;
  }
  const deadHeld = (now: Held[]) => now.filter((h) => byId.get(h.containerId)?.state !== "live").length;
  return { live, lost, deadHeldBefore, addKills, delKills, heldTwice: addresses.length - new Set(addresses).size, deadHeld };
}

/** Frees the dead attachments' reservations (the live attachments' pods exist; the dead ones' do not); how many. */
async function cleanUp(c: Campaign, store: IpamStore, found: Inspection): Promise<Pick<KillCampaignResult, "cleanup" | "released">> {
  const { cluster } = c;
  if (cluster.kind === "file") {
    const gcConf = JSON.parse(c.conf) as Record<string, unknown>;
    gcConf["cni.dev/valid-attachments"] = found.live.map((a) => ({ containerID: `kc-${a.id}`, ifname: "net1" }));
    const gc = await run("GC", { id: -1, uid: "", state: "pending" }, JSON.stringify(gcConf), undefined);
    if (gc.code !== 0) throw new Error(`GC answered ${gc.out}`);
    return { cleanup: "gc", released: found.deadHeldBefore - found.deadHeld(await readHeld(cluster)) };
  }
  for (const a of found.live) {
    const pod = await cluster.core.readNamespacedPod({ namespace: NS, name: `kp-${a.id}` });
    await cluster.core.replaceNamespacedPodStatus({ namespace: NS, name: `kp-${a.id}`, body: { ...pod, status: { phase: "Running" } } });
  }
  const pods = createKubernetesPodSource({ kubeConfig: cluster.kubeConfig });
  const report = await reconcileOnce({ store, pods, graceMs: 0 });
  pods.close();
  if (report.failed.length > 0) throw new Error(`reconcile failed: ${report.failed.map((f) => f.error.message).join("; ")}`);
  return { cleanup: "reconciler", released: report.released.length };
}

export async function runKillCampaign(cluster: Cluster, options: KillCampaignOptions): Promise<KillCampaignResult> {
  const c: Campaign = {
    cluster,
    conf: campaignConf(cluster),
    attachments: [],
    window: new KillWindow(),
    random: options.random ?? Math.random,
    kills: { killed: 0, killedAdds: 0, killedDels: 0 },
  };
  await cluster.core.createNamespace({ body: { metadata: { name: NS } } }).catch(() => undefined);
  // The kill window starts from uncut ADDs at the campaign's concurrency, then follows the load.
  const calibration = await limited(
    CONCURRENCY,
    Array.from({ length: CONCURRENCY }, () => () => addLive(c)),
  );
  for (const ms of calibration) c.window.record("ADD", ms);
  await limited(
    CONCURRENCY,
    Array.from({ length: options.kills * 2 }, (_, i) => () => (i % 2 === 0 ? killAdd(c) : killDel(c))),
  );

  const found = inspect(c, await readHeld(cluster));
  let unreadable = 0;
  for (const ref of await options.store.listPools()) await options.store.readPool(ref).catch(() => unreadable++);
  const { cleanup, released } = await cleanUp(c, options.store, found);
  const after = await readHeld(cluster);
  return {
    ...c.kills,
    addKills: found.addKills,
    delKills: found.delKills,
    live: found.live.length,
    deadHeldBefore: found.deadHeldBefore,
    deadHeldAfter: found.deadHeld(after),
    heldTwice: found.heldTwice,
    lost: found.lost,
    unreadable,
    cleanup,
    released,
  };
}

async function readHeld(cluster: Cluster): Promise<Held[]> {
  const all =
    cluster.kind === "etcd"
      ? await readEtcd(cluster.etcd?.endpoint ?? "")
      : cluster.kind === "kubernetes" || cluster.kind === "kube-apiserver"
        ? await readIpPools(cluster.kubeConfig, POOL_NAMESPACE)
        : readFileStore(join(cluster.dir, "store"));
  return all.filter((h) => h.network === NETWORK);
}
