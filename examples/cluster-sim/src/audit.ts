import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { Etcd3, Range } from "etcd3";

/**
 * What the store holds, read directly from its own bytes — etcd keys, IPPool objects, generation
 * files — without ipamkit's store code, so that the audit does not trust the code under test.
 */
export interface Held {
  network: string;
  address: string;
  containerId: string;
  ifName: string;
}

/** IPv4 only (the simulation's ranges): network address + offset. */
export function addressAt(cidr: string, offset: bigint): string {
  const [base] = cidr.split("/");
  const n = (base ?? "").split(".").reduce((acc, part) => acc * 256n + BigInt(part), 0n) + offset;
  return [24n, 16n, 8n, 0n].map((shift) => ((n >> shift) & 255n).toString()).join(".");
}

/** Every key under a prefix: pages of 2 000 (one answer may not exceed 4 MiB), all at one revision. */
async function everyKey(client: Etcd3, prefix: string): Promise<[string, string][]> {
  const end = Range.prefix(prefix).end;
  let start = Buffer.from(prefix);
  let revision: string | undefined;
  const out: [string, string][] = [];
  for (;;) {
    const request = client.getAll().inRange({ start, end }).limit(2_000);
    if (revision !== undefined) request.revision(revision);
    const response = await request.exec();
    revision ??= String(response.header.revision);
    for (const kv of response.kvs) out.push([kv.key.toString("utf8"), kv.value.toString("utf8")]);
    const last = response.kvs.at(-1);
    if (!response.more || last === undefined) return out;
    start = Buffer.concat([last.key, Buffer.from([0])]);
  }
}

export async function readEtcd(endpoint: string, prefix = "/ipamkit/"): Promise<Held[]> {
  const client = new Etcd3({ hosts: endpoint });
  try {
    const all = await everyKey(client, `${prefix}pools/`);
    const held: Held[] = [];
    for (const [key, value] of all) {
      const m = /pools\/([^/]+)\/([^/]+)\/ip\/(\d+)$/.exec(key);
      // a released address keeps its key with an empty value (the row is reused)
      if (m === null || value === "") continue;
      const network = m[1] === "_" ? "" : decodeURIComponent(m[1] ?? "");
      const cidr = decodeURIComponent(m[2] ?? "");
      const record = JSON.parse(value) as { containerId: string; ifName: string };
      held.push({ network, address: addressAt(cidr, BigInt(m[3] ?? "0")), containerId: record.containerId, ifName: record.ifName });
    }
    return held;
  } finally {
    client.close();
  }
}

/** Every allocation of the IPPools in `namespace`, read through the API server `kubeConfig` names (the test server or a real one). */
export async function readIpPools(kubeConfig: KubeConfig, namespace: string): Promise<Held[]> {
  const list = (await kubeConfig.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
    group: "whereabouts.cni.cncf.io",
    version: "v1alpha1",
    namespace,
    plural: "ippools",
  })) as {
    items: { metadata: { name: string }; spec: { range: string; allocations?: Record<string, { id: string; ifname?: string }> } }[];
  };
  const held: Held[] = [];
  for (const pool of list.items) {
    // the simulation names its networks net-<k>; an IPPool is "<network_name>-<normalized range>"
    const network = /^(net-\d+)-/.exec(pool.metadata.name)?.[1] ?? "";
    for (const [offset, entry] of Object.entries(pool.spec.allocations ?? {})) {
      held.push({ network, address: addressAt(pool.spec.range, BigInt(offset)), containerId: entry.id, ifName: entry.ifname ?? "" });
    }
  }
  return held;
}

export function readFileStore(dir: string): Held[] {
  const held: Held[] = [];
  const pools = join(dir, "pools");
  let networks: string[] = [];
  try {
    networks = readdirSync(pools);
  } catch {
    return held;
  }
  for (const network of networks) {
    for (const cidr of readdirSync(join(pools, network))) {
      const gens = readdirSync(join(pools, network, cidr))
        .filter((f) => /^\d{12,15}\.json$/.test(f))
        .sort();
      const latest = gens.at(-1);
      if (latest === undefined) continue;
      const body = JSON.parse(readFileSync(join(pools, network, cidr, latest), "utf8")) as {
        deleted?: boolean;
        cidr: string;
        network: string;
        reservations?: { offset: string; containerId: string; ifName: string }[];
      };
      if (body.deleted === true) continue;
      for (const r of body.reservations ?? []) {
        held.push({ network: body.network, address: addressAt(body.cidr, BigInt(r.offset)), containerId: r.containerId, ifName: r.ifName });
      }
    }
  }
  return held;
}

export interface AuditResult {
  /** Addresses held by more than one reservation in one network (must be 0). */
  heldTwice: number;
  /** Live attachments the store does not hold with the address the ADD returned (must be 0). */
  lost: number;
  /** Reservations of no live attachment (0 after a reconcile). */
  leaked: number;
}

/** Compares what the store holds with the attachments the simulation knows to be live. */
export function audit(held: Held[], live: Held[]): AuditResult {
  const byAddress = new Map<string, number>();
  for (const h of held) byAddress.set(`${h.network}|${h.address}`, (byAddress.get(`${h.network}|${h.address}`) ?? 0) + 1);
  const heldTwice = [...byAddress.values()].filter((n) => n > 1).length;
  const keyOf = (h: Held) => `${h.network}|${h.address}|${h.containerId}|${h.ifName}`;
  const present = new Set(held.map(keyOf));
  const expected = new Set(live.map(keyOf));
  return {
    heldTwice,
    lost: live.filter((l) => !present.has(keyOf(l))).length,
    leaked: held.filter((h) => !expected.has(keyOf(h))).length,
  };
}
