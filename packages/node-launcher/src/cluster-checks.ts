import { spawnSync } from "node:child_process";
import type { V1Pod } from "@kubernetes/client-node";
import type { Cluster } from "./cluster.js";
import { type Holding, readIpamState } from "./ipam-state.js";
import { networkStatus } from "./multus.js";

/** One secondary address of a pod, as Multus reported it in the pod's network-status. */
export interface PodAddress {
  readonly pod: string;
  readonly uid: string;
  readonly node: string;
  readonly network: string;
  readonly interface: string;
  readonly address: string;
}

/** What a cluster's API says about its addresses, checked against the invariants. */
export interface ClusterReport {
  /** every live pod's secondary address (network-status, the NADs only) */
  readonly podAddresses: readonly PodAddress[];
  /** every IPPool entry */
  readonly allocations: readonly Holding[];
  /** every ORIP */
  readonly reservations: readonly Holding[];
  /** addresses held by two keys (or whose ORIP names another holder) */
  readonly heldTwice: readonly string[];
  /** keys holding two entries */
  readonly keysWithTwo: readonly string[];
  /** pod addresses with no IPPool entry of that pod, or with an entry of another pod */
  readonly statusWithoutEntry: readonly string[];
  /** IPPool entries no live pod's network-status names (sticky entries kept for their pod excluded) */
  readonly entriesWithoutPod: readonly string[];
  /** ORIPs whose address no IPPool entry holds */
  readonly reservationsWithoutEntry: readonly string[];
  /** the same address in two live pods' network-status */
  readonly statusTwice: readonly string[];
}

/** The secondary addresses of `pods` (live ones: not being deleted), from Multus' network-status. */
export function podAddresses(cluster: Cluster, pods: readonly V1Pod[]): PodAddress[] {
  const nads = new Set(cluster.networks.names.map((n) => `${cluster.namespace}/${n}`));
  return pods
    .filter((p) => p.metadata?.deletionTimestamp === undefined)
    .flatMap((p) =>
      networkStatus(p)
        .filter((s) => nads.has(s.name))
        .flatMap((s) =>
          (s.ips ?? []).map((address) => ({
            pod: `${p.metadata?.namespace}/${p.metadata?.name}`,
            uid: p.metadata?.uid ?? "",
            node: p.spec?.nodeName ?? "",
            network: s.name,
            interface: s.interface ?? "",
            address,
          })),
        ),
    );
}

/** Reads pods, IPPools and ORIPs through the API and checks them against each other. */
export async function checkCluster(cluster: Cluster): Promise<ClusterReport> {
  const pods = (await cluster.core.listNamespacedPod({ namespace: cluster.namespace })).items;
  const state = await readIpamState(cluster.apiserver.kubeConfig);
  const addresses = podAddresses(cluster, pods);
  const live = state.allocations.filter((a) => a.released === undefined);
  const statusWithoutEntry = addresses
    .filter((a) => {
      const entries = state.allocations.filter((e) => e.address === a.address);
      return entries.length !== 1 || entries[0]?.podref !== a.pod || entries[0]?.released !== undefined;
    })
    .map((a) => `${a.pod} ${a.interface} ${a.address}`);
  const named = new Set(addresses.map((a) => `${a.pod} ${a.address}`));
  const entriesWithoutPod = live.filter((e) => !named.has(`${e.podref} ${e.address}`)).map((e) => `${e.podref} ${e.address} ${e.id}`);
  const held = new Set(state.allocations.map((a) => a.address));
  const counts = new Map<string, number>();
  for (const a of addresses) counts.set(a.address, (counts.get(a.address) ?? 0) + 1);
  return {
    podAddresses: addresses,
    allocations: state.allocations,
    reservations: state.reservations,
    heldTwice: state.heldTwice,
    keysWithTwo: state.keysWithTwo,
    statusWithoutEntry,
    entriesWithoutPod,
    reservationsWithoutEntry: state.reservations.filter((r) => !held.has(r.address)).map((r) => r.address),
    statusTwice: [...counts].filter(([, n]) => n > 1).map(([address]) => address),
  };
}

/**
 * The IPv4 addresses of each interface inside the pod's network namespace (its sandbox's pause
 * process, found through the node's CRI), as `ifname → address`.
 */
export function netnsAddresses(cluster: Cluster, pod: V1Pod): Record<string, string> {
  const node = cluster.node(pod.spec?.nodeName ?? "");
  const id = node
    .crictl(["pods", "--name", `^${pod.metadata?.name}$`, "--namespace", cluster.namespace, "--state", "ready", "-q"])
    .split("\n")[0];
  if (!id) return {};
  const info = JSON.parse(node.crictl(["inspectp", id])) as { info?: { pid?: number } };
  const out = spawnSync("nsenter", [`--target=${info.info?.pid ?? 0}`, "--net", "ip", "-4", "-o", "addr", "show"], { encoding: "utf8" });
  const result: Record<string, string> = {};
  for (const line of out.stdout.split("\n")) {
    const m = /^\d+:\s+(\S+)\s+inet (\d+\.\d+\.\d+\.\d+)\//.exec(line);
    if (m?.[1] && m[2] && m[1] !== "lo") result[m[1]] = m[2];
  }
  return result;
}
