import { attachmentKey, type Claim, type ClaimRef, StoreCorruptError } from "@ipamkit/core";
import { STORE_NAME } from "./errors.js";
import { ANNOTATION, type KubeObject, objectForWrite, RESERVATION } from "./objects.js";

/**
 * OverlappingRangeIPReservation ⇄ Claim. Whereabouts writes `spec.podref` and `spec.ifname` only
 * (never `containerid`) and keeps the address only in the object's name. ipamkit writes all three
 * spec fields and records the claim's network, pool range and address in annotations, so it never
 * has to parse a name. An object without those annotations is a Whereabouts one ("legacy"): the
 * store resolves its holder from the pools (see DESIGN.md).
 */

export type ReadReservation = { kind: "claim"; claim: Claim } | { kind: "legacy"; podRef: string | undefined };

const corrupt = (object: string, reason: string) => new StoreCorruptError(object, reason, { component: STORE_NAME });

export function readReservation(ref: ClaimRef, object: KubeObject, objectName: string): ReadReservation {
  const spec = object.spec ?? {};
  const podref = spec.podref;
  if (podref !== undefined && typeof podref !== "string") throw corrupt(objectName, "spec.podref must be a string");
  const podRef = typeof podref === "string" && podref !== "" ? podref : undefined;
  const annotations = object.metadata?.annotations ?? {};
  const network = annotations[ANNOTATION.network];
  const range = annotations[ANNOTATION.range];
  const address = annotations[ANNOTATION.address];
  if (network === undefined && range === undefined && address === undefined) return { kind: "legacy", podRef };
  if (network === undefined || range === undefined || address === undefined)
    throw corrupt(objectName, `annotations ${ANNOTATION.network}, ${ANNOTATION.range} and ${ANNOTATION.address} must come together`);
  if (network !== ref.network || address !== ref.address) {
    throw corrupt(
      objectName,
      `it reserves ${address} in network ${JSON.stringify(network)}, not ${ref.address} in ${JSON.stringify(ref.network)}: ` +
        "Whereabouts' names collide for these two (rename one network_name)",
    );
  }
  const poolNetwork = annotations[ANNOTATION.poolNetwork] ?? network;
  const poolNode = annotations[ANNOTATION.poolNode];
  const { containerid, ifname } = spec;
  if (typeof containerid !== "string" || (ifname !== undefined && typeof ifname !== "string"))
    throw corrupt(objectName, "spec.containerid must be a string, spec.ifname a string when present");
  let key: Claim["key"];
  try {
    // an ORIP CRD from before Whereabouts v0.8 prunes spec.ifname: the annotation keeps it
    key = attachmentKey({ containerId: containerid, ifName: ifname ?? annotations[ANNOTATION.ifname] ?? "" }, { allowLegacy: true });
  } catch (error) {
    throw corrupt(objectName, (error as Error).message);
  }
  const pool = poolNode === undefined ? { network: poolNetwork, cidr: range } : { network: poolNetwork, cidr: range, node: poolNode };
  return { kind: "claim", claim: { pool, key, ...(podRef === undefined ? {} : { podRef }) } };
}

export function reservationFor(
  ref: ClaimRef,
  claim: Claim,
  base: KubeObject | undefined,
  options: { name: string; namespace: string; writeId: string },
): KubeObject {
  const object = objectForWrite(RESERVATION, base, {
    name: options.name,
    namespace: options.namespace,
    annotations: {
      [ANNOTATION.write]: options.writeId,
      [ANNOTATION.network]: ref.network,
      [ANNOTATION.poolNetwork]: claim.pool.network,
      [ANNOTATION.poolNode]: claim.pool.node,
      [ANNOTATION.range]: claim.pool.cidr,
      [ANNOTATION.address]: ref.address,
      [ANNOTATION.ifname]: claim.key.ifName === "" ? undefined : claim.key.ifName,
    },
  });
  const spec: Record<string, unknown> = { ...(base?.spec ?? {}), podref: claim.podRef ?? "", containerid: claim.key.containerId };
  if (claim.key.ifName !== "") spec.ifname = claim.key.ifName;
  else delete spec.ifname;
  object.spec = spec;
  return object;
}
