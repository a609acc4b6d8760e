import {
  attachmentKey,
  type Cidr,
  formatIp,
  ipAt,
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
 * optional `poduid` and `created`. Any other field of an entry is kept in `Reservation.extra` and
 * written back; any other field of the object is kept by writing over the object as read.
 */

/** Whereabouts parses keys as signed 64-bit integers and drops the rest: offsets from here on are invisible to it. */
export const WHEREABOUTS_OFFSET_LIMIT = 1n << 63n;

const DECIMAL = /^(0|[1-9][0-9]*)$/;
const KNOWN = new Set(["id", "podref", "ifname", "poduid", "created"]);

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

function reservationOf(cidr: Cidr, key: string, entry: unknown, objectName: string): Reservation {
  const where = `spec.allocations[${JSON.stringify(key)}]`;
  if (!DECIMAL.test(key)) throw corrupt(objectName, `${where}: the key is not a decimal offset`);
  const offset = BigInt(key);
  if (offset >= cidr.size) throw corrupt(objectName, `${where}: offset ${key} is outside ${cidr.text}`);
  if (!isObject(entry)) throw corrupt(objectName, `${where}: expected an object`);
  const { id, podref, ifname, poduid, created } = entry;
  if (typeof id !== "string") throw corrupt(objectName, `${where}: "id" must be a string`);
  if (ifname !== undefined && typeof ifname !== "string") throw corrupt(objectName, `${where}: "ifname" must be a string`);
  for (const [field, value] of [
    ["podref", podref],
    ["poduid", poduid],
    ["created", created],
  ] as const) {
    if (value !== undefined && typeof value !== "string") throw corrupt(objectName, `${where}: "${field}" must be a string`);
  }
  let attachment: Reservation["key"];
  try {
    attachment = attachmentKey({ containerId: id, ifName: ifname ?? "" }, { allowLegacy: true });
  } catch (error) {
    throw corrupt(objectName, `${where} (${formatIp(ipAt(cidr, offset))}): ${(error as Error).message}`);
  }
  const r: { -readonly [K in keyof Reservation]: Reservation[K] } = { offset, key: attachment };
  if (typeof podref === "string" && podref !== "") r.podRef = podref;
  if (typeof poduid === "string") r.podUid = poduid;
  if (typeof created === "string") r.createdAt = created;
  let extra: Json | undefined;
  for (const field of Object.keys(entry)) {
    if (KNOWN.has(field)) continue;
    extra ??= {};
    extra[field] = entry[field];
  }
  if (extra !== undefined) r.extra = extra;
  return r;
}

/** Reads an IPPool as a Pool. Nothing is dropped: an entry that cannot be read is StoreCorruptError. */
export function poolFromIPPool(ref: PoolRef, object: KubeObject, objectName: string): Pool {
  const cidr = ipPoolRange(object, objectName);
  if (cidr.text !== ref.cidr) throw corrupt(objectName, `spec.range ${cidr.text} is not the pool's range ${ref.cidr} (a name collision)`);
  const allocations = object.spec?.allocations ?? {};
  if (!isObject(allocations)) throw corrupt(objectName, "spec.allocations must be an object");
  const reservations = Object.entries(allocations).map(([key, entry]) => reservationOf(cidr, key, entry, objectName));
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
  return entry;
}

export interface IPPoolWrite {
  name: string;
  namespace: string;
  /** A fresh token for the `ipamkit.io/write` annotation. */
  writeId: string;
  /** Refuse new offsets ≥ 2^63, which Whereabouts readers cannot see. */
  whereaboutsCompatible: boolean;
}

/** The IPPool to write for `pool`: `base` (the object as read, if any) with new allocations and annotations. */
export function ipPoolFor(ref: PoolRef, pool: Pool, base: KubeObject | undefined, options: IPPoolWrite): KubeObject {
  const before = isObject(base?.spec?.allocations) ? base.spec.allocations : {};
  const allocations: Json = {};
  for (const r of pool) {
    const key = r.offset.toString();
    if (options.whereaboutsCompatible && r.offset >= WHEREABOUTS_OFFSET_LIMIT && !Object.hasOwn(before, key)) {
      throw new StoreRejectedError(
        `IPPool ${options.namespace}/${options.name}`,
        `offset ${key} (${formatIp(ipAt(pool.cidr, r.offset))}) is at or above 2^63, which Whereabouts cannot read; ` +
          "set whereaboutsCompatible: false once no Whereabouts binary or reconciler reads these pools",
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
      [ANNOTATION.lastOffset]: pool.lastOffset?.toString(),
      [ANNOTATION.allocations]: String(pool.size),
    },
  });
  object.spec = { ...(base?.spec ?? {}), range: base?.spec?.range ?? ref.cidr, allocations };
  return object;
}
