import {
  type Cidr,
  cidrContains,
  type PoolRef,
  parseCidr,
  StoreAccessDeniedError,
  StoreConflictError,
  StoreCorruptError,
} from "@ipamkit/core";
import type { ObjectApi } from "./api.js";
import { STORE_NAME } from "./errors.js";
import { ipPoolName } from "./names.js";
import { ANNOTATION, type KubeObject, NODE_SLICE_POOL } from "./objects.js";

/**
 * Whose pool a listed IPPool is. A name cannot say: `a-b-10.0.0.0-24` is network `a-b`'s pool of
 * 10.0.0.0/24, or node `b`'s slice pool of network `a` (Whereabouts' `<network>-<node>-<slice>`),
 * and the claims of the two live in different networks. So:
 * - an IPPool ipamkit wrote says it (`ipamkit.io/network`, and `ipamkit.io/node` on a slice pool);
 * - a Whereabouts-written one named `X-normalize(range)` is node N's slice pool of network W when a
 *   NodeSlicePool W (or, on the unnamed network, one whose slice is assigned to N = X) has that slice:
 *   X = `W-N` with N its current node, or X = N (the unnamed network); failing that, X = `W-N` for a
 *   former node N of a slice of W's range. Otherwise it is network X's pool of the range.
 * The NodeSlicePools are listed only when some pool needs them. Unreadable (no such CRD, no RBAC):
 * none, and Whereabouts' slice pools are then listed as network X's (a warning says so, once).
 */

/** A NodeSlicePool as the listing needs it. */
export interface SliceOwners {
  name: string;
  range: Cidr;
  /** Slice → its node (non-empty names only). */
  nodeOf: ReadonlyMap<string, string>;
}

/** The NodeSlicePools of a listing; malformed ones are left out (they name no slice). */
export function sliceOwnersOf(objects: readonly KubeObject[]): SliceOwners[] {
  const out: SliceOwners[] = [];
  for (const object of objects) {
    const spec = (object.spec ?? {}) as { range?: unknown };
    const status = ((object as { status?: { allocations?: unknown } }).status ?? {}) as { allocations?: unknown };
    if (typeof spec.range !== "string") continue;
    let range: Cidr;
    try {
      range = parseCidr(spec.range);
    } catch {
      continue;
    }
    const nodeOf = new Map<string, string>();
    for (const a of Array.isArray(status.allocations) ? status.allocations : []) {
      const { nodeName, sliceRange } = (a ?? {}) as { nodeName?: unknown; sliceRange?: unknown };
      if (typeof nodeName !== "string" || nodeName === "" || typeof sliceRange !== "string") continue;
      try {
        nodeOf.set(parseCidr(sliceRange).text, nodeName);
      } catch {
        // not a CIDR: no slice
      }
    }
    out.push({ name: object.metadata?.name ?? "", range, nodeOf });
  }
  return out;
}

/** An IPPool's owner from ipamkit's annotations, if it has them; StoreCorruptError when they do not give its name. */
export function annotatedRef(name: string, cidr: Cidr, object: KubeObject, label: string): PoolRef | undefined {
  const annotations = object.metadata?.annotations ?? {};
  const network = annotations[ANNOTATION.network];
  if (network === undefined) return undefined;
  const node = annotations[ANNOTATION.node];
  const ref: PoolRef = node === undefined ? { network, cidr: cidr.text } : { network, cidr: cidr.text, node };
  if (ipPoolName(ref) !== name) {
    throw new StoreCorruptError(label, `its annotations name pool ${ipPoolName(ref)}, not this one`, { component: STORE_NAME });
  }
  return ref;
}

/** The owner of an unannotated IPPool named `X-normalize(range)` (X non-empty), from the NodeSlicePools. */
export function resolveOwner(prefix: string, cidr: Cidr, slices: readonly SliceOwners[]): PoolRef {
  const first = { family: cidr.family, value: cidr.network };
  const holding = slices.filter((s) => s.range.family === cidr.family && s.range.prefix <= cidr.prefix && cidrContains(s.range, first));
  for (const s of holding) {
    const node = s.nodeOf.get(cidr.text);
    if (node === undefined) continue;
    if (prefix === `${s.name}-${node}`) return { network: s.name, cidr: cidr.text, node };
    if (prefix === node) return { network: "", cidr: cidr.text, node };
  }
  for (const s of holding) {
    if (prefix.length > s.name.length + 1 && prefix.startsWith(`${s.name}-`))
      return { network: s.name, cidr: cidr.text, node: prefix.slice(s.name.length + 1) };
  }
  return { network: prefix, cidr: cidr.text };
}

let warnedUnreadable = false;

/** The NodeSlicePools of the namespace; none when the kind is not served or not readable (warned once per process). */
export async function listSliceOwners(api: ObjectApi, warn: (message: string) => void): Promise<SliceOwners[]> {
  try {
    return sliceOwnersOf(await api.list(NODE_SLICE_POOL));
  } catch (error) {
    if (!(error instanceof StoreConflictError) && !(error instanceof StoreAccessDeniedError)) throw error;
    if (error instanceof StoreAccessDeniedError && !warnedUnreadable) {
      warnedUnreadable = true;
      warn(
        `[ipamkit] [${STORE_NAME}] cannot list NodeSlicePools in ${api.namespace} (${error.message}): Whereabouts' node-slice IPPools ` +
          "are listed as pools of network <network>-<node>; grant list on nodeslicepools",
      );
    }
    return [];
  }
}
