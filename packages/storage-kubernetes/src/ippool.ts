import { createHash } from "node:crypto";
import {
  attachmentKey,
  type Cidr,
  formatIp,
  ipAt,
  isLegacyKey,
  Pool,
  type PoolRef,
  parseCidr,
  type Reservation,
  StoreCorruptError,
  StoreRejectedError,
} from "@ipamkit/core";
import { STORE_NAME } from "./errors.js";
import { ANNOTATION, IPPOOL, isObject, type Json, type KubeObject, objectForWrite } from "./objects.js";

/**
 * IPPool ⇄ Pool. `spec.allocations` is keyed by the decimal offset from the network address of
 * `spec.range`; each entry is `{id, podref, ifname?}` as Whereabouts writes it, plus ipamkit's
 * optional `poduid` and `created`, and `sticky` (keep seconds) and `released` of a sticky address
 * (core DESIGN.md, "Sticky addresses"). Any other field of an entry is kept in `Reservation.extra` and
 * written back; any other field of the object is kept by writing over the object as read.
 */

/** Whereabouts parses keys as signed 64-bit integers and drops the rest: offsets from here on are invisible to it. */
export const WHEREABOUTS_OFFSET_LIMIT = 1n << 63n;

const DECIMAL = /^(0|[1-9][0-9]*)$/;
const KNOWN = new Set(["id", "podref", "ifname", "poduid", "created", "sticky", "released"]);

const corrupt = (object: string, reason: string) => new StoreCorruptError(object, reason, { component: STORE_NAME });

/** The canonical CIDR of an IPPool's `spec.range`, or StoreCorruptError naming the object. */
export function ipPoolRange(object: KubeObject, objectName: string): Cidr {
  const range = object.spec?.range;
  if (typeof range !== "string") throw corrupt(objectName, "spec.range must be a CIDR string");
  try {
    return parseCidr(range);
  } catch {
    throw corrupt(objectName, `spec.range ${JSON.stringify(range)} is not a CIDR`);
  }
}

/**
 * The `ipamkit.io/ifnames` annotation, for an IPPool CRD that prunes `ifname` (Whereabouts < 0.8):
 * offset → `"<ifName> <tag>"`, tag = 48 bits of SHA-256 of the entry's container id. An entry
 * stored without `ifname` takes the hint's interface only while its container id still has that
 * tag — an offset Whereabouts freed and gave another container is never misread (DESIGN.md).
 */
export type IfNameHints = ReadonlyMap<string, string>;

const tags = new Map<string, string>();
/** The container id's tag (memoised: one hash per id, a bounded memo). */
export function idTag(containerId: string): string {
  let tag = tags.get(containerId);
  if (tag === undefined) {
    tag = createHash("sha256").update(containerId).digest("base64url").slice(0, 8);
    if (tags.size >= 65_536) tags.clear();
    tags.set(containerId, tag);
  }
  return tag;
}

/** The hints of an IPPool, or undefined when it has none. A malformed annotation is no hint at all (never trusted). */
export function ifNameHints(object: KubeObject): IfNameHints | undefined {
  const text = object.metadata?.annotations?.[ANNOTATION.ifnames];
  if (text === undefined) return undefined;
  const hints = new Map<string, string>();
  try {
    const parsed: unknown = JSON.parse(text);
    if (!isObject(parsed)) return hints;
    for (const [offset, hint] of Object.entries(parsed)) if (typeof hint === "string") hints.set(offset, hint);
  } catch {
    // ignored: rewritten whole by the next ipamkit write
  }
  return hints;
}

/** The interface a hint gives an entry of container `id` stored without ifname, if the hint is still its own. */
function hintedIfName(hints: IfNameHints | undefined, key: string, id: string): string | undefined {
  const hint = hints?.get(key);
  if (hint === undefined) return undefined;
  const space = hint.indexOf(" ");
  return space > 0 && hint.slice(space + 1) === idTag(id) ? hint.slice(0, space) : undefined;
}

function keyOf(id: string, ifname: string | undefined, hint: string | undefined): Reservation["key"] {
  if (ifname === undefined && hint !== undefined) {
    try {
      return attachmentKey({ containerId: id, ifName: hint });
    } catch {
      // not an interface name: the entry stays legacy
    }
  }
  return attachmentKey({ containerId: id, ifName: ifname ?? "" }, { allowLegacy: true });
}

function reservationOf(cidr: Cidr, key: string, entry: unknown, objectName: string, hints?: IfNameHints): Reservation {
  const where = `spec.allocations[${JSON.stringify(key)}]`;
  if (!DECIMAL.test(key)) throw corrupt(objectName, `${where}: the key is not a decimal offset`);
  const offset = BigInt(key);
  if (offset >= cidr.size) throw corrupt(objectName, `${where}: offset ${key} is outside ${cidr.text}`);
  if (!isObject(entry)) throw corrupt(objectName, `${where}: expected an object`);
  const { id, podref, ifname, poduid, created, sticky, released } = entry;
  if (typeof id !== "string") throw corrupt(objectName, `${where}: "id" must be a string`);
  if (ifname !== undefined && typeof ifname !== "string") throw corrupt(objectName, `${where}: "ifname" must be a string`);
  for (const [field, value] of [
    ["podref", podref],
    ["poduid", poduid],
    ["created", created],
    ["released", released],
  ] as const) {
    if (value !== undefined && typeof value !== "string") throw corrupt(objectName, `${where}: "${field}" must be a string`);
  }
  let attachment: Reservation["key"];
  try {
    attachment = keyOf(id, ifname, ifname === undefined ? hintedIfName(hints, key, id) : undefined);
  } catch (error) {
    throw corrupt(objectName, `${where} (${formatIp(ipAt(cidr, offset))}): ${(error as Error).message}`);
  }
  const r: { -readonly [K in keyof Reservation]: Reservation[K] } = { offset, key: attachment };
  if (typeof podref === "string" && podref !== "") r.podRef = podref;
  if (typeof poduid === "string") r.podUid = poduid;
  if (typeof created === "string") r.createdAt = created;
  if (sticky !== undefined) {
    if (typeof sticky !== "number" || !Number.isSafeInteger(sticky) || sticky < 0)
      throw corrupt(objectName, `${where}: "sticky" must be a whole number of seconds`);
    r.sticky = sticky;
  }
  if (typeof released === "string") r.releasedAt = released;
  let extra: Json | undefined;
  for (const field of Object.keys(entry)) {
    if (KNOWN.has(field)) continue;
    extra ??= {};
    extra[field] = entry[field];
  }
  if (extra !== undefined) r.extra = extra;
  return r;
}

/**
 * StoreCorruptError when ipamkit's annotations say the object is another pool's than `ref` (the
 * names of network `a-b`'s pool and node `b`'s slice pool of network `a` collide).
 */
export function checkPoolOwner(ref: PoolRef, object: KubeObject, objectName: string): void {
  const annotations = object.metadata?.annotations ?? {};
  const network = annotations[ANNOTATION.network];
  if (network === undefined || (network === ref.network && annotations[ANNOTATION.node] === ref.node)) return;
  const owner = (n: string, node: string | undefined) =>
    `network ${JSON.stringify(n)}${node === undefined ? "" : ` node ${JSON.stringify(node)}`}`;
  throw corrupt(
    objectName,
    `it is the pool of ${owner(network, annotations[ANNOTATION.node])}, not of ${owner(ref.network, ref.node)}: Whereabouts' names collide for these two (rename one network_name)`,
  );
}

/** Reads an IPPool as a Pool. Nothing is dropped: an entry that cannot be read is StoreCorruptError. */
export function poolFromIPPool(ref: PoolRef, object: KubeObject, objectName: string): Pool {
  const cidr = ipPoolRange(object, objectName);
  if (cidr.text !== ref.cidr) throw corrupt(objectName, `spec.range ${cidr.text} is not the pool's range ${ref.cidr} (a name collision)`);
  const allocations = object.spec?.allocations ?? {};
  if (!isObject(allocations)) throw corrupt(objectName, "spec.allocations must be an object");
  const hints = ifNameHints(object);
  const reservations = Object.entries(allocations).map(([key, entry]) => reservationOf(cidr, key, entry, objectName, hints));
  const cursor = object.metadata?.annotations?.[ANNOTATION.lastOffset];
  if (cursor !== undefined && !DECIMAL.test(cursor))
    throw corrupt(objectName, `annotation ${ANNOTATION.lastOffset} must be a decimal offset`);
  return Pool.fromReservations(cidr, reservations, { name: objectName, ...(cursor === undefined ? {} : { lastOffset: BigInt(cursor) }) });
}

function entryOf(r: Reservation): Json {
  const entry: Json = { ...(r.extra ?? {}), id: r.key.containerId, podref: r.podRef ?? "" };
  if (r.key.ifName !== "") entry.ifname = r.key.ifName;
  if (r.podUid !== undefined) entry.poduid = r.podUid;
  if (r.createdAt !== undefined) entry.created = r.createdAt;
  if (r.sticky !== undefined) entry.sticky = r.sticky;
  if (r.releasedAt !== undefined) entry.released = r.releasedAt;
  return entry;
}

export interface IPPoolWrite {
  name: string;
  namespace: string;
  /** A fresh token for the `ipamkit.io/write` annotation. */
  writeId: string;
  /** Refuse new offsets ≥ 2^63, which Whereabouts readers cannot see, unless an ORIP guards them. */
  whereaboutsCompatible: boolean;
  /**
   * New offsets ≥ 2^63 whose address an ORIP of the same attachment already claims: Whereabouts
   * drops such a key when it reads the pool (as it drops its own), but its overlap check meets
   * the ORIP and skips the address, so writing it is safe (and gives what Whereabouts gives).
   */
  guardedOffsets?: ReadonlySet<string>;
  /** Record every entry's interface in `ipamkit.io/ifnames` (the CRD prunes `ifname`); otherwise the annotation is removed. */
  recordIfNames?: boolean;
}

/** The `ipamkit.io/ifnames` value for a pool: every entry with an interface name. */
export function ifNamesAnnotation(pool: Pool): string {
  const hints: Record<string, string> = {};
  for (const r of pool) if (!isLegacyKey(r.key)) hints[r.offset.toString()] = `${r.key.ifName} ${idTag(r.key.containerId)}`;
  return JSON.stringify(hints);
}

/** The IPPool to write for `pool`: `base` (the object as read, if any) with new allocations and annotations. */
export function ipPoolFor(ref: PoolRef, pool: Pool, base: KubeObject | undefined, options: IPPoolWrite): KubeObject {
  const before = isObject(base?.spec?.allocations) ? base.spec.allocations : {};
  const allocations: Json = {};
  for (const r of pool) {
    const key = r.offset.toString();
    const unseen = r.offset >= WHEREABOUTS_OFFSET_LIMIT && !Object.hasOwn(before, key) && options.guardedOffsets?.has(key) !== true;
    if (options.whereaboutsCompatible && unseen) {
      throw new StoreRejectedError(
        `IPPool ${options.namespace}/${options.name}`,
        `offset ${key} (${formatIp(ipAt(pool.cidr, r.offset))}) is at or above 2^63, which Whereabouts cannot read, and no ORIP guards it; ` +
          "keep enable_overlapping_ranges on, or set whereaboutsCompatible: false once no Whereabouts binary or reconciler reads these pools",
        { component: STORE_NAME },
      );
    }
    allocations[key] = entryOf(r);
  }
  const object = objectForWrite(IPPOOL, base, {
    name: options.name,
    namespace: options.namespace,
    annotations: {
      [ANNOTATION.write]: options.writeId,
      // whose pool it is (pool-owners.ts): a node's slice pool cannot be told from its name
      [ANNOTATION.network]: ref.network,
      [ANNOTATION.node]: ref.node,
      [ANNOTATION.lastOffset]: pool.lastOffset?.toString(),
      [ANNOTATION.ifnames]: options.recordIfNames === true ? ifNamesAnnotation(pool) : undefined,
      // no longer written: a count Whereabouts' writes made stale; removed where an older ipamkit left it
      [ANNOTATION.staleAllocations]: undefined,
    },
  });
  object.spec = { ...(base?.spec ?? {}), range: base?.spec?.range ?? ref.cidr, allocations };
  return object;
}
