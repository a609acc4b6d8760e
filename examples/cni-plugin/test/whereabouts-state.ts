import { ApiException } from "@kubernetes/client-node";
import { type Attachment, GROUP, type Interop, POOL_NAMESPACE, podref, VERSION } from "./whereabouts.js";

// What the API server holds for one IPv4 range of the unnamed network, read the way Whereabouts
// reads it (IPPool entries keyed by decimal offset; ORIPs named by the address), and the
// invariants both binaries must keep on it.

export interface PoolEntry {
  address: string;
  id: string;
  podref: string;
  /** Absent in entries Whereabouts < 0.8 wrote (and where the CRD prunes it). */
  ifname?: string;
}

export interface Orip {
  /** The object's name: the address, for the unnamed network. */
  address: string;
  podref?: string;
  ifname?: string;
  containerid?: string;
}

export interface RangeState {
  /** The IPPool exists. */
  pool: boolean;
  entries: PoolEntry[];
  orips: Orip[];
}

function ipv4(text: string): number {
  const parts = text.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) throw new Error(`not an IPv4 address: ${text}`);
  return ((parts[0] ?? 0) * 2 ** 24 + (parts[1] ?? 0) * 2 ** 16 + (parts[2] ?? 0) * 2 ** 8 + (parts[3] ?? 0)) >>> 0;
}
const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");

/** `10.80.1.0/24` → its network number and size. */
function parseRange(range: string): { network: number; size: number } {
  const [address = "", bits = ""] = range.split("/");
  const prefix = Number(bits);
  const size = 2 ** (32 - prefix);
  return { network: ipv4(address) - (ipv4(address) % size), size };
}

/** The address at a decimal offset of the range, as Whereabouts keys allocations. */
export function addressAt(range: string, offset: number): string {
  return dotted(parseRange(range).network + offset);
}

/** Whereabouts' IPPool name for the unnamed network: `10.80.1.0/24` → `10.80.1.0-24`. */
export const poolName = (range: string) => range.replaceAll(":", "-").replaceAll("/", "-");

function inRange(range: string, name: string): boolean {
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(name)) return false;
  const { network, size } = parseRange(range);
  const n = ipv4(name);
  return n >= network && n < network + size;
}

type Obj = { metadata?: { name?: string }; spec?: Record<string, unknown> };
const text = (v: unknown) => (typeof v === "string" ? v : undefined);

/** Reads the range's IPPool and the ORIPs of its addresses from the API server. */
export async function readState(interop: Interop, range: string): Promise<RangeState> {
  const base = { group: GROUP, version: VERSION, namespace: POOL_NAMESPACE };
  let pool: Obj | undefined;
  try {
    pool = (await interop.custom.getNamespacedCustomObject({ ...base, plural: "ippools", name: poolName(range) })) as Obj;
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 404)) throw error;
  }
  const allocations = (pool?.spec?.allocations ?? {}) as Record<string, Record<string, unknown>>;
  const entries = Object.entries(allocations).map(([offset, entry]) => {
    const ifname = text(entry.ifname);
    return {
      address: addressAt(range, Number(offset)),
      id: text(entry.id) ?? "",
      podref: text(entry.podref) ?? "",
      ...(ifname === undefined ? {} : { ifname }),
    };
  });
  const list = (await interop.custom.listNamespacedCustomObject({ ...base, plural: "overlappingrangeipreservations" })) as { items: Obj[] };
  const orips = list.items
    .filter((o) => inRange(range, o.metadata?.name ?? ""))
    .map((o) => {
      const spec = o.spec ?? {};
      const orip: Orip = { address: o.metadata?.name ?? "" };
      for (const key of ["podref", "ifname", "containerid"] as const) {
        const value = text(spec[key]);
        if (value !== undefined && value !== "") orip[key] = value;
      }
      return orip;
    });
  return { pool: pool !== undefined, entries, orips };
}

export interface ProblemOptions {
  /** When given, the pool must hold exactly these attachments at these addresses. */
  live?: ReadonlyMap<Attachment, string>;
  /** ORIPs must name the entry's container id too (ipamkit writes it; Whereabouts never does). */
  requireContainerId?: boolean;
}

/**
 * Every way the range breaks the invariants, one line each (empty: none): an attachment (container
 * id + ifname) holding two addresses, an entry without its ORIP, an ORIP naming another
 * attachment than its entry, an ORIP no entry backs, and — given `live` — any entry that is not
 * a live attachment's or a live attachment missing or at another address.
 */
export function problems(state: RangeState, options: ProblemOptions = {}): string[] {
  const out: string[] = [];
  const byKey = new Map<string, string>();
  for (const e of state.entries) {
    if (e.ifname === undefined) continue; // legacy entries of one container may be several
    const key = `${e.id}/${e.ifname}`;
    const other = byKey.get(key);
    if (other !== undefined) out.push(`attachment ${key} holds two addresses: ${other} and ${e.address}`);
    byKey.set(key, e.address);
  }
  const orips = new Map(state.orips.map((o) => [o.address, o]));
  for (const e of state.entries) {
    const o = orips.get(e.address);
    const who = `entry ${e.address} (${e.id}/${e.ifname ?? "-"} ${e.podref})`;
    if (o === undefined) out.push(`${who} has no ORIP`);
    else {
      const mismatch: string[] = [];
      if (o.podref !== e.podref) mismatch.push(`podref ${o.podref}`);
      if (o.ifname !== undefined && e.ifname !== undefined && o.ifname !== e.ifname) mismatch.push(`ifname ${o.ifname}`);
      if (o.containerid !== undefined && o.containerid !== e.id) mismatch.push(`containerid ${o.containerid}`);
      if (options.requireContainerId === true && o.containerid === undefined) mismatch.push("no containerid");
      if (mismatch.length > 0) out.push(`${who}: its ORIP names ${mismatch.join(", ")}`);
    }
  }
  const entryAddresses = new Set(state.entries.map((e) => e.address));
  for (const o of state.orips)
    if (!entryAddresses.has(o.address))
      out.push(`ORIP ${o.address} (${o.containerid ?? "-"}/${o.ifname ?? "-"} ${o.podref ?? "-"}) has no pool entry`);
  if (options.live !== undefined) {
    const expected = new Map([...options.live].map(([a, ip]) => [ip, a]));
    for (const e of state.entries) {
      const a = expected.get(e.address);
      if (a === undefined) out.push(`entry ${e.address} (${e.id}/${e.ifname ?? "-"}) belongs to no live attachment`);
      else if (a.id !== e.id || a.ifname !== e.ifname || podref(a) !== e.podref)
        out.push(`entry ${e.address} names ${e.id}/${e.ifname ?? "-"} ${e.podref}, not ${a.id}/${a.ifname} ${podref(a)}`);
    }
    for (const [ip, a] of expected) if (!entryAddresses.has(ip)) out.push(`${a.id}/${a.ifname}'s address ${ip} has no pool entry`);
  }
  return out;
}
