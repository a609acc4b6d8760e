import { spawn } from "node:child_process";
import { join } from "node:path";
import type { IpamStore } from "@ipamkit/core";
import { reconcileOnce } from "@ipamkit/reconciler";
import { createKubernetesPodSource } from "@ipamkit/storage-kubernetes";
import { type Held, readEtcd, readFileStore, readIpPools } from "./audit.js";
import { type Cluster, POOL_NAMESPACE } from "./cluster.js";
import { limited, PLUGIN, quantile } from "./cni.js";

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

const NS = "kill";
const NETWORK = "net-1";
/** CNI processes at once. */
const CONCURRENCY = 4;
/** Addresses per attachment: one from each of the config's two overlapping ranges. */
const ADDRESSES = 2;

interface Attachment {
  id: number;
  uid: string;
  /** Addresses of its acknowledged ADD. */
  ips?: string[];
  state: "live" | "dead" | "pending";
  /** The command a SIGKILL cut short. */
  killedIn?: "ADD" | "DEL";
}

/**
 * Kill moments relative to the median of recent uncut calls of that command under the campaign's
 * own concurrency (a window measured once, alone, is too short once 4 processes share 2 cores: every
 * kill then lands before the store is touched). Half are drawn from the whole call (0–1.3 × median);
 * half from its end (0.6–1.1 ×), where a process does its store work after Node's start-up.
 */
class KillWindow {
  private readonly recent: Record<"ADD" | "DEL", number[]> = { ADD: [], DEL: [] };
  record(command: "ADD" | "DEL", ms: number): void {
    const xs = this.recent[command];
    xs.push(ms);
    if (xs.length > 16) xs.shift();
  }
  draw(command: "ADD" | "DEL", random: () => number): number {
    // the calibration ADDs come first, so there is always a sample
    const median = quantile(this.recent[command].length > 0 ? this.recent[command] : this.recent.ADD, 0.5);
    return random() < 0.5 ? random() * 1.3 * median : (0.6 + random() * 0.5) * median;
  }
}

function env(command: string, a: Attachment): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    CNI_COMMAND: command,
    CNI_CONTAINERID: `kc-${a.id}`,
    CNI_IFNAME: "net1",
    CNI_NETNS: `/var/run/netns/kc-${a.id}`,
    CNI_PATH: "/opt/cni/bin",
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=kp-${a.id};K8S_POD_UID=${a.uid}`,
  };
}

/** Runs the binary; kills it after `killAfterMs` unless it finished. */
function run(command: string, a: Attachment, conf: string, killAfterMs: number | undefined) {
  return new Promise<{ killed: boolean; code: number | null; out: string; ms: number }>((resolve) => {
    const started = performance.now();
    const child = spawn(PLUGIN, [], { env: env(command, a), stdio: ["pipe", "pipe", "ignore"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    const timer = killAfterMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    // "close", not "exit": a process's exit can be seen before the last bytes of its stdout (a CI run
    // under load read an uncut ADD's answer as empty); the binary execs Node in place, so a killed
    // call leaves no process holding the pipe open
    child.on("close", (code, signal) => {
      if (timer !== undefined) clearTimeout(timer);
      resolve({ killed: signal === "SIGKILL", code, out, ms: performance.now() - started });
    });
    child.stdin.on("error", () => undefined);
    child.stdin.end(conf);
  });
}

export interface KillCampaignOptions {
  /** SIGKILLs to aim for (some processes finish before their kill). */
  kills: number;
  /** The store the cleanup and the clean-read check use (same backend as the cluster). */
  store: IpamStore;
  random?: () => number;
}

export async function runKillCampaign(cluster: Cluster, options: KillCampaignOptions): Promise<KillCampaignResult> {
  const random = options.random ?? Math.random;
  const {
    agent_socket: _socket,
    agent_required: _required,
    ...storeKeys
  } = cluster.ipam(cluster.nodes[0] ?? { name: "n", socket: "", agent: undefined });
  const conf = JSON.stringify({
    cniVersion: "1.1.0",
    name: "kill-net",
    type: "macvlan",
    ipam: { type: "ipamkit", range: "10.90.0.0/23", ipRanges: [{ range: "10.90.1.0/24" }], network_name: NETWORK, ...storeKeys },
  });
  const attachments: Attachment[] = [];
  // Every attachment's pod is an object in the API server before its ADD (its UID goes into
  // CNI_ARGS, as kubelet passes it); a dead attachment's pod is deleted, a live one's is Running.
  const fresh = async (): Promise<Attachment> => {
    const a: Attachment = { id: attachments.length, uid: "", state: "pending" };
    attachments.push(a);
    const pod = await cluster.core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: `kp-${a.id}` },
        spec: { nodeName: "node-0", containers: [{ name: "app", image: "registry.example/app:1" }] },
      },
    });
    a.uid = pod.metadata?.uid ?? "";
    return a;
  };
  const bury = (a: Attachment) => cluster.core.deleteNamespacedPod({ namespace: NS, name: `kp-${a.id}`, gracePeriodSeconds: 0 });
  await cluster.core.createNamespace({ body: { metadata: { name: NS } } }).catch(() => undefined);
  const addLive = async (): Promise<number> => {
    const a = await fresh();
    const r = await run("ADD", a, conf, undefined);
    if (r.code !== 0) throw new Error(`ADD kc-${a.id} failed: ${r.out}`);
    a.ips = (JSON.parse(r.out) as { ips: { address: string }[] }).ips.map((ip) => ip.address.split("/")[0] ?? "");
    a.state = "live";
    return r.ms;
  };
  // The kill window starts from uncut ADDs at the campaign's concurrency, then follows the load.
  const window = new KillWindow();
  const calibration = await limited(
    CONCURRENCY,
    Array.from({ length: CONCURRENCY }, () => addLive),
  );
  for (const ms of calibration) window.record("ADD", ms);
  const result = { killed: 0, killedAdds: 0, killedDels: 0 };
  const ops = Array.from({ length: options.kills * 2 }, (_, i) => async () => {
    if (i % 2 === 0) {
      const a = await fresh();
      const r = await run("ADD", a, conf, window.draw("ADD", random));
      if (r.killed) {
        a.state = "dead";
        a.killedIn = "ADD";
        await bury(a);
        result.killed++;
        result.killedAdds++;
      } else if (r.code === 0) {
        window.record("ADD", r.ms);
        a.ips = (JSON.parse(r.out) as { ips: { address: string }[] }).ips.map((ip) => ip.address.split("/")[0] ?? "");
        a.state = "live";
      } else throw new Error(`ADD kc-${a.id} answered ${r.out}`);
      return;
    }
    const victim = attachments.find((a) => a.state === "live" && a.id >= CONCURRENCY && random() < 0.5);
    if (victim === undefined) {
      window.record("ADD", await addLive());
      return;
    }
    victim.state = "dead"; // its pod is going away, whatever the DEL manages
    await bury(victim);
    const r = await run("DEL", victim, conf, window.draw("DEL", random));
    if (r.killed) {
      victim.killedIn = "DEL";
      result.killed++;
      result.killedDels++;
    } else if (r.code === 0) window.record("DEL", r.ms);
    else throw new Error(`DEL kc-${victim.id} answered ${r.out}`);
  });
  await limited(CONCURRENCY, ops);

  const held = await readHeld(cluster);
  const byId = new Map(attachments.map((a) => [`kc-${a.id}`, a]));
  const addresses = held.map((h) => h.address);
  const live = attachments.filter((a) => a.state === "live");
  const liveHeld = new Set(held.filter((h) => byId.get(h.containerId)?.state === "live").map((h) => `${h.containerId}|${h.address}`));
  const lost = live.reduce((n, a) => n + (a.ips ?? []).filter((ip) => !liveHeld.has(`kc-${a.id}|${ip}`)).length, 0);
  const deadHeldBefore = held.filter((h) => byId.get(h.containerId)?.state !== "live").length;
  const heldBy = new Map<string, number>();
  for (const h of held) heldBy.set(h.containerId, (heldBy.get(h.containerId) ?? 0) + 1);
  const addKills = { untouched: 0, partial: 0, written: 0 };
  const delKills = { untouched: 0, partial: 0, released: 0 };
  for (const a of attachments) {
    const n = heldBy.get(`kc-${a.id}`) ?? 0;
    if (a.killedIn === "ADD") addKills[n === 0 ? "untouched" : n < ADDRESSES ? "partial" : "written"]++;
    if (a.killedIn === "DEL") delKills[n === ADDRESSES ? "untouched" : n > 0 ? "partial" : "released"]++;
  }
  let unreadable = 0;
  for (const ref of await options.store.listPools()) await options.store.readPool(ref).catch(() => unreadable++);

  // Cleanup: the live attachments' pods exist; the dead ones' do not.
  let released: number;
  let cleanup: KillCampaignResult["cleanup"];
  if (cluster.kind === "file") {
    cleanup = "gc";
    const gcConf = JSON.parse(conf) as Record<string, unknown>;
    gcConf["cni.dev/valid-attachments"] = live.map((a) => ({ containerID: `kc-${a.id}`, ifname: "net1" }));
    const gc = await run("GC", { id: -1, uid: "", state: "pending" }, JSON.stringify(gcConf), undefined);
    if (gc.code !== 0) throw new Error(`GC answered ${gc.out}`);
    released = deadHeldBefore - (await readHeld(cluster)).filter((h) => byId.get(h.containerId)?.state !== "live").length;
  } else {
    cleanup = "reconciler";
    for (const a of live) {
      const pod = await cluster.core.readNamespacedPod({ namespace: NS, name: `kp-${a.id}` });
      await cluster.core.replaceNamespacedPodStatus({ namespace: NS, name: `kp-${a.id}`, body: { ...pod, status: { phase: "Running" } } });
    }
    const pods = createKubernetesPodSource({ kubeConfig: cluster.kubeConfig });
    const report = await reconcileOnce({ store: options.store, pods, graceMs: 0 });
    pods.close();
    if (report.failed.length > 0) throw new Error(`reconcile failed: ${report.failed.map((f) => f.error.message).join("; ")}`);
    released = report.released.length;
  }
  const after = await readHeld(cluster);
  return {
    ...result,
    addKills,
    delKills,
    live: live.length,
    deadHeldBefore,
    deadHeldAfter: after.filter((h) => byId.get(h.containerId)?.state !== "live").length,
    heldTwice: addresses.length - new Set(addresses).size,
    lost,
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
