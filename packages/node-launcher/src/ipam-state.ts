import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";

const GROUP = "whereabouts.cni.cncf.io";
const VERSION = "v1alpha1";

export interface Holding {
  readonly address: string;
  readonly id: string;
  readonly ifname: string;
  readonly podref: string;
  /** a sticky address kept for its pod since this time (IPPool entries only) */
  readonly released?: string;
}

export interface IpamState {
  /** every allocation of every IPPool, as address + key */
  readonly allocations: readonly Holding[];
  /** every OverlappingRangeIPReservation (named by its address) */
  readonly reservations: readonly Holding[];
  /** addresses held by two entries, or whose reservation names another holder than its entry */
  readonly heldTwice: readonly string[];
  /** keys (container id + ifname) holding more than one pool entry */
  readonly keysWithTwo: readonly string[];
}

interface Pool {
  spec?: { range?: string; allocations?: Record<string, { id?: string; ifname?: string; podref?: string; released?: string }> };
}
interface Orip {
  metadata?: { name?: string };
  spec?: { containerid?: string; ifname?: string; podref?: string };
}

function ipv4Plus(range: string, offset: bigint): string {
  const base = (range.split("/")[0] ?? "").split(".").reduce((n, octet) => (n << 8n) + BigInt(octet), 0n) + offset;
  return [24n, 16n, 8n, 0n].map((s) => String((base >> s) & 255n)).join(".");
}

/** Reads the pools and reservations through the API server (all namespaces) and checks the invariants. */
export async function readIpamState(kubeConfig: KubeConfig): Promise<IpamState> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const pools = ((await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: "ippools" })) as { items: Pool[] }).items;
  const orips = (
    (await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: "overlappingrangeipreservations" })) as { items: Orip[] }
  ).items;
  const allocations = pools.flatMap((pool) =>
    Object.entries(pool.spec?.allocations ?? {}).map(([offset, a]) => ({
      address: ipv4Plus(pool.spec?.range ?? "0.0.0.0/0", BigInt(offset)),
      id: a.id ?? "",
      ifname: a.ifname ?? "",
      podref: a.podref ?? "",
      ...(a.released ? { released: a.released } : {}),
    })),
  );
  const reservations = orips.map((o) => ({
    address: o.metadata?.name ?? "",
    id: o.spec?.containerid ?? "",
    ifname: o.spec?.ifname ?? "",
    podref: o.spec?.podref ?? "",
  }));
  // an address is held twice when two pool entries name it under different keys, or its
  // reservation (ORIP) names another holder than its entry. Whereabouts writes ORIPs without a
  // container id: those are compared by pod and interface.
  const holders = new Map<string, Set<string>>();
  const addressesOf = new Map<string, Set<string>>();
  for (const h of allocations) {
    const key = `${h.id}/${h.ifname}`;
    holders.set(h.address, (holders.get(h.address) ?? new Set()).add(key));
    addressesOf.set(key, (addressesOf.get(key) ?? new Set()).add(h.address));
  }
  const byAddress = new Map(allocations.map((a) => [a.address, a]));
  for (const r of reservations) {
    const entry = byAddress.get(r.address);
    if (entry === undefined) continue;
    const same =
      r.id === ""
        ? r.podref === entry.podref && (r.ifname === "" || r.ifname === entry.ifname)
        : r.id === entry.id && r.ifname === entry.ifname;
    if (!same) holders.get(r.address)?.add(`orip:${r.id || r.podref}/${r.ifname}`);
  }
  return {
    allocations,
    reservations,
    heldTwice: [...holders].filter(([, keys]) => keys.size > 1).map(([address]) => address),
    keysWithTwo: [...addressesOf].filter(([, addresses]) => addresses.size > 1).map(([key]) => key),
  };
}
