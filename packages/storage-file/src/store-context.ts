import { statSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import {
  type Claim,
  type ClaimRef,
  claimId,
  IpamError,
  Pool,
  PoolCorruptError,
  type PoolRef,
  poolId,
  StoreAccessDeniedError,
} from "@ipamkit/core";
import { decodeClaim, decodePool } from "./codec.js";
import { decodeName, encodeName, isWellFormed, MAX_ENCODED_LENGTH } from "./encoding.js";
import type { Decode } from "./generation-format.js";
import { Generations } from "./generations.js";

/** The backend name used in error prefixes: `[ipamkit] [storage-file] …`. */
export const STORE_NAME = "storage-file";

/** Decoded pools kept per store for unchanged files (each is checked by inode, size and times). */
const POOL_CACHE = 16;
const CLAIM_CACHE = 1024;

/** What the file store's calls share: one per createFileStore call. */
export interface FileContext {
  /** The resolved root directory of the store. */
  readonly root: string;
  readonly poolsRoot: string;
  readonly claimsRoot: string;
  /** Checks the root's owner and mode; called first by every call (see rootGuard). */
  readonly guard: () => void;
  readonly pools: Generations<Pool>;
  readonly claims: Generations<Claim>;
}

export function createFileContext(root: string): FileContext {
  return {
    root,
    poolsRoot: join(root, "pools"),
    claimsRoot: join(root, "claims"),
    guard: rootGuard(root),
    pools: new Generations<Pool>(STORE_NAME, POOL_CACHE, root),
    claims: new Generations<Claim>(STORE_NAME, CLAIM_CACHE, root),
  };
}

export function checkedName(kind: string, text: string): string {
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

export const poolDir = (ctx: FileContext, ref: PoolRef) =>
  join(ctx.poolsRoot, checkedName("network name", ref.network), checkedName("CIDR", ref.cidr));
export const claimDir = (ctx: FileContext, ref: ClaimRef) =>
  join(ctx.claimsRoot, checkedName("network name", ref.network), checkedName("address", ref.address));
export const poolLabel = (ref: PoolRef) => `pool ${poolId(ref)}`;
export const claimLabel = (ref: ClaimRef) => `claim ${claimId(ref)}`;

export const poolDecoder =
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
export const claimDecoder: Decode<Claim> = (json) => decodeClaim(json);

/** Decoded names of the subdirectories of `dir` (stray entries that no name encodes to are skipped). */
export async function children(ctx: FileContext, dir: string): Promise<{ name: string; text: string }[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "ENOENT") return [];
    throw ctx.pools.unavailable("list", dir, error);
  }
  const out: { name: string; text: string }[] = [];
  for (const name of names) {
    const text = decodeName(name);
    if (text !== undefined) out.push({ name, text });
  }
  return out;
}
