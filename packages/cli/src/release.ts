import {
  cidrContains,
  createIpam,
  formatIp,
  formatKey,
  holderAt,
  type IpamStore,
  ipAt,
  isKept,
  type Pool,
  type PoolRef,
  parseCidr,
  parseIp,
  parseKey,
  poolId,
  type Reservation,
  sameKey,
} from "@ipamkit/core";
import { CliError } from "./errors.js";
import type { Progress } from "./inventory.js";
import type { StoreSpec } from "./store-spec.js";

export interface ReleaseRequest {
  /** `containerID/ifName` (exact; `containerID/` for a legacy Whereabouts entry). */
  key?: string;
  ip?: string;
  /** Only this pool (its CIDR). */
  pool?: string;
  dryRun: boolean;
}

/**
 * A sticky reservation still held by its sandbox is first kept for its pod (`kept`, as a DEL would
 * do), not freed: release it again to free it.
 */
export type ReleaseOutcome = "would-release" | "would-keep" | "released" | "kept" | "changed" | "absent";

export interface ReleaseResult {
  pool: string;
  address: string;
  key: string;
  podRef?: string;
  outcome: ReleaseOutcome;
}

interface Target {
  ref: PoolRef;
  reservation: Reservation;
}

function validate(request: ReleaseRequest): { match: "key" | "ip"; test: (pool: Pool) => Reservation | undefined } {
  if ((request.key === undefined) === (request.ip === undefined)) throw new CliError("give exactly one of --key and --ip");
  if (request.key !== undefined) {
    let key: ReturnType<typeof parseKey>;
    try {
      key = parseKey(request.key);
    } catch (error) {
      throw new CliError(`--key: ${(error as Error).message.split("\n")[0]}`);
    }
    return { match: "key", test: (pool) => pool.reservations().find((r) => sameKey(r.key, key)) };
  }
  const text = request.ip as string;
  let address: string;
  try {
    address = formatIp(parseIp(text));
  } catch {
    throw new CliError(`--ip: ${JSON.stringify(text)} is not an IP address`);
  }
  return { match: "ip", test: (pool) => (cidrContains(pool.cidr, parseIp(address)) ? holderAt(pool, address) : undefined) };
}

/** The reservations a request names, each in the pool it was read from. */
async function findTargets(store: IpamStore, spec: StoreSpec, request: ReleaseRequest, progress: Progress): Promise<Target[]> {
  const { match, test } = validate(request);
  let poolCidr: string | undefined;
  if (request.pool !== undefined) {
    try {
      poolCidr = parseCidr(request.pool).text;
    } catch {
      throw new CliError(`--pool: ${JSON.stringify(request.pool)} is not a CIDR`);
    }
  }
  const refs = (await store.listPools()).filter(
    (r) => (spec.network === undefined || r.network === spec.network) && (poolCidr === undefined || r.cidr === poolCidr),
  );
  progress(`looking for the ${match === "key" ? `key ${request.key}` : `address ${request.ip}`} in ${refs.length} pool(s)`);
  const targets: Target[] = [];
  for (const ref of refs) {
    const stored = await store.readPool(ref);
    const reservation = stored === undefined ? undefined : test(stored.pool);
    if (reservation !== undefined) targets.push({ ref, reservation });
  }
  if (match === "ip" && targets.length > 1) {
    throw new CliError(
      `${request.ip} is held in ${targets.length} pools (${targets.map((t) => poolId(t.ref)).join(", ")}): name one with --pool (and --network)`,
    );
  }
  return targets;
}

/**
 * Releases what a request names, each only if it is still exactly as read (core's conditional
 * release, which also drops the overlapping-range claim naming it). A dry run writes nothing.
 */
export async function release(store: IpamStore, spec: StoreSpec, request: ReleaseRequest, progress: Progress): Promise<ReleaseResult[]> {
  const targets = await findTargets(store, spec, request, progress);
  const ipam = createIpam({ store, overlappingRanges: spec.overlappingRanges ?? true });
  const results: ReleaseResult[] = [];
  for (const { ref, reservation } of targets) {
    // core's release of a held sticky reservation marks it kept instead of freeing it
    const keeps = reservation.sticky !== undefined && !isKept(reservation);
    let outcome: ReleaseOutcome = keeps ? "would-keep" : "would-release";
    if (!request.dryRun) {
      const [done = "absent"] = await ipam.releaseAllIf(ref, [reservation]);
      outcome = done === "released" && keeps ? "kept" : done;
    }
    results.push({
      pool: poolId(ref),
      address: formatIp(ipAt(parseCidr(ref.cidr), reservation.offset)),
      key: formatKey(reservation.key),
      ...(reservation.podRef === undefined ? {} : { podRef: reservation.podRef }),
      outcome,
    });
  }
  return results;
}
