import { randomUUID } from "node:crypto";
import {
  type Claim,
  type ClaimRef,
  cidrContains,
  comparePoolRefs,
  completeStore,
  formatIp,
  type Ip,
  type IpamStore,
  type PoolRef,
  parseIp,
  type ScannedClaim,
  type ScannedPool,
  type StoreBackend,
  StoreConflictError,
  StoreCorruptError,
  type StoredClaim,
  type StoredPool,
  type Version,
} from "@ipamkit/core";
import { createObjectApi } from "./api.js";
import { STORE_NAME } from "./errors.js";
import { ipPoolFor, ipPoolRange, poolFromIPPool } from "./ippool.js";
import { type ListedPool, resolveLegacyHolder } from "./legacy.js";
import { addressFromReservationName, ipPoolName, networkOfPool, reservationName } from "./names.js";
import { ANNOTATION, IPPOOL, type Kind, type KubeObject, RESERVATION } from "./objects.js";
import { type KubernetesStoreOptions, resolveOptions } from "./options.js";
import { readReservation, reservationFor } from "./orip.js";
import { fieldsKept, ifNamesPruned, warnPruningOnce } from "./pruning.js";

/**
 * The Kubernetes store, on Whereabouts' own custom resources (see DESIGN.md). A pool is one
 * IPPool; its version is `metadata.resourceVersion`; every write is a PUT (or a create) guarded by
 * it, so a stale write is a 409 and changes nothing. Overlapping-range claims are
 * OverlappingRangeIPReservations, written by core's fenced claim protocol (no multi-object
 * transactions exist). No Lease, no leader election.
 */
export function createKubernetesStore(options: KubernetesStoreOptions = {}): IpamStore {
  const resolved = resolveOptions(options);
  const api = createObjectApi(resolved);
  const namespace = resolved.namespace;
  const warn = options.onWarning ?? ((message: string) => process.emitWarning(message, { code: "IPAMKIT_KUBERNETES" }));
  /** Learned from a write: this API server's IPPool CRD prunes `ifname` (Whereabouts < 0.8). */
  let prunesIfNames = false;
  /** The last object seen of each name: written over, so fields ipamkit does not know survive. */
  const seen = new Map<string, KubeObject>();
  /** The last pool decoded per IPPool name and version: a read at an unchanged version skips decoding. */
  const decoded = new Map<string, StoredPool>();
  const label = (kind: Kind, name: string) => `${kind.kind} ${namespace}/${name}`;
  const versionOf = (object: KubeObject, kind: Kind, name: string): Version => {
    const version = object.metadata?.resourceVersion;
    if (typeof version !== "string" || version === "")
      throw new StoreCorruptError(label(kind, name), "no metadata.resourceVersion", { component: STORE_NAME });
    return version;
  };
  const remember = (kind: Kind, name: string, object: KubeObject): Version => {
    seen.set(`${kind.plural}/${name}`, object);
    return versionOf(object, kind, name);
  };

  /** The object to write over at `expected`: as last seen, or re-read; a different version is a conflict now. */
  async function baseAt(kind: Kind, name: string, expected: Version): Promise<KubeObject> {
    const last = seen.get(`${kind.plural}/${name}`);
    if (last?.metadata?.resourceVersion === expected) return last;
    const current = await api.get(kind, name);
    if (current?.metadata?.resourceVersion !== expected) throw new StoreConflictError(label(kind, name), { component: STORE_NAME });
    return current;
  }

  async function put(kind: Kind, body: KubeObject, expected: Version | undefined): Promise<KubeObject> {
    return expected === undefined ? api.create(kind, body) : api.replace(kind, body);
  }

  async function listIPPools(): Promise<ListedPool[]> {
    const out: ListedPool[] = [];
    for (const object of await api.list(IPPOOL)) {
      const name = object.metadata?.name ?? "";
      const cidr = ipPoolRange(object, label(IPPOOL, name));
      const network = networkOfPool(name, cidr.text);
      if (network === undefined)
        throw new StoreCorruptError(label(IPPOOL, name), `its name is not Whereabouts' name for spec.range ${cidr.text}`, {
          component: STORE_NAME,
        });
      out.push({ ref: { network, cidr: cidr.text }, cidr, object, label: label(IPPOOL, name) });
    }
    return out.sort((a, b) => comparePoolRefs(a.ref, b.ref));
  }

  /** An IPPool object read as its pool, decoded again only when its version changed. */
  function storedPool(ref: PoolRef, name: string, object: KubeObject): StoredPool {
    const version = remember(IPPOOL, name, object);
    const cached = decoded.get(name);
    if (cached?.version === version) return cached;
    const stored = { pool: poolFromIPPool(ref, object, label(IPPOOL, name)), version };
    decoded.set(name, stored);
    return stored;
  }

  /** IPPools listed once, on first need (only Whereabouts-written reservations need them). */
  const listedPools = () => {
    let listed: Promise<ListedPool[]> | undefined;
    return () => {
      listed ??= listIPPools();
      return listed;
    };
  };

  /**
   * The claims of `network` among listed reservations, one per address, in address order:
   * ipamkit's by their annotations; Whereabouts' by name, kept only if the name re-encodes from the
   * address and a pool of the network contains it.
   */
  async function claimsAmong(
    objects: readonly KubeObject[],
    network: string,
    pools: () => Promise<ListedPool[]>,
  ): Promise<{ ref: ClaimRef; object: KubeObject }[]> {
    const found = new Map<string, KubeObject>();
    for (const object of objects) {
      const name = object.metadata?.name ?? "";
      const annotations = object.metadata?.annotations ?? {};
      const annotated = annotations[ANNOTATION.address];
      if (annotated !== undefined) {
        if (annotations[ANNOTATION.network] === network && !found.has(annotated)) found.set(annotated, object);
        continue;
      }
      const candidate = addressFromReservationName(name, network);
      if (candidate === undefined) continue;
      let ip: Ip;
      try {
        ip = parseIp(candidate);
      } catch {
        continue;
      }
      const address = formatIp(ip);
      if (reservationName({ network, address }) !== name || found.has(address)) continue;
      if ((await pools()).some((p) => p.ref.network === network && cidrContains(p.cidr, ip))) found.set(address, object);
    }
    return [...found].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([address, object]) => ({ ref: { network, address }, object }));
  }

  /** A reservation object read as its claim (a Whereabouts one resolved from the pools). */
  async function storedClaim(ref: ClaimRef, object: KubeObject, name: string, pools: () => Promise<ListedPool[]>): Promise<StoredClaim> {
    const version = remember(RESERVATION, name, object);
    const read = readReservation(ref, object, label(RESERVATION, name));
    const claim: Claim = read.kind === "claim" ? read.claim : resolveLegacyHolder(ref, read.podRef, await pools());
    return { claim, version };
  }

  async function readClaim(ref: ClaimRef): Promise<StoredClaim | undefined> {
    const name = reservationName(ref);
    const object = await api.get(RESERVATION, name);
    if (object === undefined) return undefined;
    return storedClaim(ref, object, name, listedPools());
  }

  /** Every pool, each read from one paged list of the IPPools (a corrupt one with its error). */
  async function scanPools(): Promise<ScannedPool[]> {
    return (await listIPPools()).map((listed): ScannedPool => {
      try {
        return { ref: listed.ref, stored: storedPool(listed.ref, listed.object.metadata?.name ?? "", listed.object) };
      } catch (error) {
        return { ref: listed.ref, error: error instanceof Error ? error : new Error(String(error)) };
      }
    });
  }

  /** The claims of these networks from one paged list of the reservation objects; with contents, each as readClaim reads it. */
  async function listClaims(networks: readonly string[], contents: boolean): Promise<ClaimRef[] | ScannedClaim[]> {
    const objects = await api.list(RESERVATION);
    const pools = listedPools();
    const refs: ClaimRef[] = [];
    const out: ScannedClaim[] = [];
    for (const network of new Set(networks))
      for (const { ref, object } of await claimsAmong(objects, network, pools)) {
        refs.push(ref);
        if (!contents) continue;
        const name = object.metadata?.name ?? "";
        // an object not at its claim's name is not what readClaim reads there: read that instead
        const stored = name === reservationName(ref) ? await storedClaim(ref, object, name, pools) : await readClaim(ref);
        if (stored !== undefined) out.push({ ref, stored });
      }
    return contents ? out : refs;
  }

  const store: StoreBackend = {
    name: STORE_NAME,
    // no multi-object transactions; one paged list reads every pool or reservation
    capabilities: { crossProcess: true, distributed: true, transactions: false, entryWrites: false, batchReads: false, bulkLists: true },

    async readPool(ref) {
      const name = ipPoolName(ref);
      const object = await api.get(IPPOOL, name);
      if (object === undefined) {
        decoded.delete(name);
        return undefined;
      }
      return storedPool(ref, name, object);
    },

    async writePool(ref, pool, expected) {
      const name = ipPoolName(ref);
      const base = expected === undefined ? undefined : await baseAt(IPPOOL, name, expected);
      const bodyFor = (over: KubeObject | undefined, recordIfNames: boolean) =>
        ipPoolFor(ref, pool, over, {
          name,
          namespace,
          writeId: randomUUID(),
          whereaboutsCompatible: resolved.whereaboutsCompatible,
          recordIfNames,
        });
      // a pool that carries the annotation was found on such a CRD before (by any ipamkit process)
      const recorded = prunesIfNames || base?.metadata?.annotations?.[ANNOTATION.ifnames] !== undefined;
      let written = await put(IPPOOL, bodyFor(base, recorded), expected);
      let version = remember(IPPOOL, name, written);
      const ifNamesLost = ifNamesPruned(pool, written);
      if (ifNamesLost && !recorded) {
        // First seen here: record the interfaces at once, over what was just stored. Best effort —
        // the write above stands whatever happens to this one; a conflict means another writer
        // came in between, and the next ipamkit write of the pool records them.
        prunesIfNames = true;
        try {
          written = await api.replace(IPPOOL, bodyFor(written, true));
          version = remember(IPPOOL, name, written);
        } catch {
          // the pool stays at `version`
        }
      }
      if (fieldsKept(pool, written) && !ifNamesLost) decoded.set(name, { pool, version });
      else {
        decoded.delete(name);
        warnPruningOnce(warn, label(IPPOOL, name), ifNamesLost);
      }
      return version;
    },

    async listPools(listing) {
      return listing?.contents === true ? scanPools() : (await listIPPools()).map((p) => p.ref);
    },

    readClaims: (refs) => Promise.all(refs.map(readClaim)),

    async writeClaim(ref, claim, expected) {
      const name = reservationName(ref);
      const base = expected === undefined ? undefined : await baseAt(RESERVATION, name, expected);
      const body = reservationFor(ref, claim, base, { name, namespace, writeId: randomUUID() });
      return remember(RESERVATION, name, await put(RESERVATION, body, expected));
    },

    async deleteClaim(ref, expected) {
      const name = reservationName(ref);
      await api.remove(RESERVATION, name, expected);
      seen.delete(`${RESERVATION.plural}/${name}`);
    },

    listClaims: (networks, listing) => listClaims(networks, listing?.contents === true),

    async close() {
      api.close();
      seen.clear();
      decoded.clear();
    },
  };
  return completeStore(store);
}
