import { statSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  type Claim,
  type ClaimRef,
  claimId,
  comparePoolRefs,
  completeStore,
  IpamError,
  type IpamStore,
  Pool,
  PoolCorruptError,
  type PoolRef,
  poolId,
  StoreAccessDeniedError,
  type StoreBackend,
  type StoredClaim,
  type StoredPool,
} from "@ipamkit/core";
import { decodeClaim, decodePool, encodeClaimFields, encodePoolFields } from "./codec.js";
import { decodeName, encodeName, isWellFormed, MAX_ENCODED_LENGTH } from "./encoding.js";
import { DELETED, type Decode, versionOf } from "./generation-format.js";
import { Generations } from "./generations.js";

/** The backend name used in error prefixes: `[ipamkit] [storage-file] …`. */
export const STORE_NAME = "storage-file";

/** The default root directory, beside the CNI plugins' own state. */
export const DEFAULT_FILE_STORE_DIR = "/var/lib/cni/ipamkit";

export interface FileStoreOptions {
  /**
   * Root directory of the store; created with mode 0700 on the first write when missing.
   * Every process that shares IP pools on this node must use the same directory, on a local
   * filesystem that supports hard links (ext4, xfs, btrfs, tmpfs…; not a network filesystem).
   * Default `/var/lib/cni/ipamkit`.
   */
  dir?: string;
}

/** Decoded pools kept per store for unchanged files (each is checked by inode, size and times). */
const POOL_CACHE = 16;
const CLAIM_CACHE = 1024;

function checkedName(kind: string, text: string): string {
  const reject = (why: string) => new IpamError("INVALID_REQUEST", `${kind} ${JSON.stringify(text)} ${why}`, { component: STORE_NAME });
  if (typeof text !== "string" || !isWellFormed(text)) throw reject("is not well-formed text");
  const name = encodeName(text);
  if (name.length > MAX_ENCODED_LENGTH) throw reject("is too long to be stored as a file name");
  return name;
}

/**
 * Checks an existing root once per store: it must be writable by its owner only, and owned by this
 * user (or root). Anyone else who can write there can plant or remove reservations — hand out an
 * address twice. A missing root is fine: the store creates it 0700.
 */
function rootGuard(root: string): () => void {
  let trusted = false;
  return () => {
    if (trusted) return;
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(root);
    } catch {
      return; // missing (created 0700 on the first write) or unreadable (reported by the call itself)
    }
    const uid = process.geteuid?.();
    const mode = (st.mode & 0o7777).toString(8).padStart(4, "0");
    const refuse = (why: string) =>
      new StoreAccessDeniedError(
        `data directory ${root} ${why}: another user could plant or remove reservations; it must be owned by this user and writable by it alone (chmod 700)`,
        { component: STORE_NAME },
      );
    if ((st.mode & 0o022) !== 0) throw refuse(`is writable by group or others (mode ${mode})`);
    if (uid !== undefined && st.uid !== uid && st.uid !== 0) throw refuse(`is owned by uid ${st.uid}, not by this user (uid ${uid})`);
    trusted = true;
  };
}

/**
 * The embedded single-node store: one directory tree on a local filesystem, safe for many OS
 * processes at once (several CNI invocations on a node) without any lock. Every pool and every
 * claim is a directory of immutable generation files; a write links a complete, fsynced file to
 * the next generation number, so a concurrent write loses with StoreConflictError and a reader
 * never sees a partial file. See DESIGN.md.
 */
export function createFileStore(options: FileStoreOptions = {}): IpamStore {
  const root = resolve(options.dir ?? DEFAULT_FILE_STORE_DIR);
  const poolsRoot = join(root, "pools");
  const claimsRoot = join(root, "claims");
  const guard = rootGuard(root);
  const pools = new Generations<Pool>(STORE_NAME, POOL_CACHE, root);
  const claims = new Generations<Claim>(STORE_NAME, CLAIM_CACHE, root);

  const poolDir = (ref: PoolRef) => join(poolsRoot, checkedName("network name", ref.network), checkedName("CIDR", ref.cidr));
  const claimDir = (ref: ClaimRef) => join(claimsRoot, checkedName("network name", ref.network), checkedName("address", ref.address));
  const poolLabel = (ref: PoolRef) => `pool ${poolId(ref)}`;
  const claimLabel = (ref: ClaimRef) => `claim ${claimId(ref)}`;

  const poolDecoder =
    (ref: PoolRef): Decode<Pool> =>
    (json, path, text) => {
      const data = decodePool(ref, json, text);
      const name = poolId(ref);
      try {
        return Pool.fromReservations(data.cidr, data.reservations, { name, lastOffset: data.lastOffset });
      } catch (error) {
        if (!(error instanceof PoolCorruptError)) throw error;
        // Same error class and pool; the message also names the file.
        const prefix = `[ipamkit] [core] pool ${name} is corrupt: `;
        const reason = error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
        const named = new PoolCorruptError(name, `${reason} (in ${path})`);
        named.cause = error;
        throw named;
      }
    };
  const claimDecoder: Decode<Claim> = (json) => decodeClaim(json);

  /** Decoded names of the subdirectories of `dir` (stray entries that no name encodes to are skipped). */
  async function children(dir: string): Promise<{ name: string; text: string }[]> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === "ENOENT") return [];
      throw pools.unavailable("list", dir, error);
    }
    const out: { name: string; text: string }[] = [];
    for (const name of names) {
      const text = decodeName(name);
      if (text !== undefined) out.push({ name, text });
    }
    return out;
  }

  async function readClaim(ref: ClaimRef): Promise<StoredClaim | undefined> {
    const snapshot = await claims.read(claimDir(ref), claimLabel(ref), claimDecoder);
    if (snapshot === undefined || snapshot.value === DELETED) return undefined;
    return { claim: snapshot.value, version: versionOf(snapshot.gen) };
  }

  async function listClaimsOf(network: string): Promise<ClaimRef[]> {
    const dir = join(claimsRoot, checkedName("network name", network));
    const addresses = await children(dir);
    const live = await Promise.all(addresses.map((a) => claims.exists(join(dir, a.name), claimLabel({ network, address: a.text }))));
    return addresses
      .filter((_, i) => live[i])
      .map((a) => ({ network, address: a.text }))
      .sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
  }

  // no bulk lists, batched reads or transactions: core's adapter reads record by record
  return completeStore({
    name: STORE_NAME,
    capabilities: { crossProcess: true, distributed: false, transactions: false, entryWrites: false, batchReads: false, bulkLists: false },

    async readPool(ref: PoolRef): Promise<StoredPool | undefined> {
      guard();
      const snapshot = await pools.read(poolDir(ref), poolLabel(ref), poolDecoder(ref));
      if (snapshot === undefined || snapshot.value === DELETED) return undefined;
      return { pool: snapshot.value, version: versionOf(snapshot.gen) };
    },

    async writePool(ref, pool, expected) {
      guard();
      // Reading it back would give an equal pool; cache this one when it also carries the same name.
      const cacheable = pool.name === poolId(ref) ? pool : undefined;
      return pools.commit(poolDir(ref), poolLabel(ref), expected, encodePoolFields(ref, pool), poolDecoder(ref), cacheable);
    },

    async listPools() {
      guard();
      const out: PoolRef[] = [];
      for (const network of await children(poolsRoot)) {
        const dir = join(poolsRoot, network.name);
        const cidrs = await children(dir);
        const live = await Promise.all(
          cidrs.map((c) => pools.exists(join(dir, c.name), poolLabel({ network: network.text, cidr: c.text }))),
        );
        cidrs.forEach((c, i) => {
          if (live[i]) out.push({ network: network.text, cidr: c.text });
        });
      }
      return out.sort(comparePoolRefs);
    },

    async readClaims(refs: readonly ClaimRef[]): Promise<(StoredClaim | undefined)[]> {
      guard();
      return Promise.all(refs.map(readClaim));
    },

    async writeClaim(ref, claim, expected) {
      guard();
      const normalized: Claim = {
        pool: { network: claim.pool.network, cidr: claim.pool.cidr },
        key: claim.key,
        ...(claim.podRef === undefined ? {} : { podRef: claim.podRef }),
      };
      return claims.commit(claimDir(ref), claimLabel(ref), expected, encodeClaimFields(normalized), claimDecoder, normalized);
    },

    async deleteClaim(ref, expected) {
      guard();
      await claims.commit(claimDir(ref), claimLabel(ref), expected, DELETED, claimDecoder);
    },

    async listClaims(networks) {
      guard();
      const out: ClaimRef[] = [];
      for (const network of networks) out.push(...(await listClaimsOf(network)));
      return out;
    },

    async close() {
      pools.clear();
      claims.clear();
    },
  } satisfies StoreBackend);
}
