import {
  type Claim,
  type ClaimRef,
  claimFromRecord,
  claimId,
  claimToRecord,
  comparePoolRefs,
  type IpamStore,
  type Pool,
  type PoolRef,
  poolFromRecord,
  poolId,
  poolToRecord,
  StoreConflictError,
  StoreCorruptError,
  type StoredClaim,
  type StoredPool,
  StoreUnavailableError,
  type StoreWrite,
  type Version,
} from "@ipamkit/core";
import { noop } from "cockatiel";
import { type DeleteBuilder, Etcd3, type IOptions, type PutBuilder } from "etcd3";
import { mapEtcdError, STORE_NAME } from "./errors.js";
import { layout } from "./layout.js";
import { type EtcdStoreOptions, normalizeEndpoint, resolveTls } from "./options.js";

export const DEFAULT_PREFIX = "/ipamkit/";

/**
 * The etcd store. Every write is one etcd transaction guarded by the key's mod revision (or
 * create revision 0 for create-if-absent); no lock, no lease. It offers the atomic `commit`, so
 * core writes an overlapping-range claim in the same transaction as its pool.
 */
export function createEtcdStore(options: EtcdStoreOptions = {}): IpamStore {
  const tls = resolveTls(options.tls);
  const endpoints = (options.endpoints ?? ["127.0.0.1:2379"]).map((e) => normalizeEndpoint(e, tls !== undefined));
  const requestTimeoutMs = options.requestTimeoutMs ?? 5_000;
  const keys = layout(options.prefix ?? DEFAULT_PREFIX);
  const owned = options.client === undefined;
  const client =
    options.client ??
    new Etcd3({
      hosts: endpoints,
      dialTimeout: options.dialTimeoutMs ?? 3_000,
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + requestTimeoutMs }),
      // core's withConflictRetry is the only retry loop: no hidden retries or circuit breakers here.
      faultHandling: { host: () => noop, global: noop },
      ...(tls === undefined
        ? {}
        : {
            credentials: {
              rootCertificate: tls.ca ?? Buffer.alloc(0),
              ...(tls.key ? { privateKey: tls.key } : {}),
              ...(tls.cert ? { certChain: tls.cert } : {}),
            } as IOptions["credentials"],
          }),
      ...(options.username === undefined ? {} : { auth: { username: options.username, password: options.password ?? "" } }),
    });

  /** Runs one etcd call under the request deadline, mapping every failure in one place. */
  async function call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new StoreUnavailableError(`etcd ${operation} timed out after ${requestTimeoutMs} ms on ${endpoints.join(",")}`, {
              component: STORE_NAME,
            }),
          ),
        requestTimeoutMs + 250,
      );
    });
    try {
      return await Promise.race([fn(), deadline]);
    } catch (error) {
      throw mapEtcdError(error, operation, endpoints);
    } finally {
      clearTimeout(timer);
    }
  }

  async function readJson(key: string, operation: string): Promise<{ value: unknown; version: Version } | undefined> {
    const response = await call(operation, () => client.get(key).exec());
    const kv = response.kvs[0];
    if (kv === undefined) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(kv.value.toString("utf8"));
    } catch {
      throw new StoreCorruptError(key, "not valid JSON", { component: STORE_NAME });
    }
    return { value, version: kv.mod_revision };
  }

  /** Builds one transaction from the steps; all compares must hold. Returns the new revision. */
  async function transact(steps: readonly StoreWrite[], operation: string): Promise<string[]> {
    const keyOf = (w: StoreWrite) => (w.kind === "pool" || w.kind === "check-pool" ? keys.pool(w.ref) : keys.claim(w.ref));
    const compares = steps.map((w) => ({ key: keyOf(w), expected: w.expected }));
    const [first, ...rest] = compares;
    if (first === undefined) return [];
    // Create-if-absent: create revision 0; otherwise the mod revision read.
    const column = (c: { expected: Version | undefined }) => (c.expected === undefined ? "Create" : "Mod");
    const value = (c: { expected: Version | undefined }) => c.expected ?? 0;
    const txn = client.if(first.key, column(first), "==", value(first));
    for (const c of rest) txn.and(c.key, column(c), "==", value(c));
    const ops: (PutBuilder | DeleteBuilder)[] = [];
    for (const w of steps) {
      if (w.kind === "pool") ops.push(client.put(keys.pool(w.ref)).value(JSON.stringify(poolToRecord(w.ref, w.pool))));
      else if (w.kind === "claim") ops.push(client.put(keys.claim(w.ref)).value(JSON.stringify(claimToRecord(w.claim))));
      else if (w.kind === "delete-claim") ops.push(client.delete().key(keys.claim(w.ref)));
    }
    const result = await call(operation, () => txn.then(...ops).commit());
    if (!result.succeeded) {
      const object = steps.map((w) => (w.kind.endsWith("pool") ? poolId(w.ref as PoolRef) : claimId(w.ref as ClaimRef))).join(" + ");
      throw new StoreConflictError(object, { component: STORE_NAME });
    }
    const revision = result.header.revision;
    return steps.map((w) => (w.kind === "check-pool" ? (w.expected ?? "") : w.kind === "delete-claim" ? "" : revision));
  }

  const store = {
    name: STORE_NAME,
    capabilities: { crossProcess: true, distributed: true },
    async readPool(ref: PoolRef): Promise<StoredPool | undefined> {
      const key = keys.pool(ref);
      const read = await readJson(key, `read ${poolId(ref)}`);
      return read === undefined ? undefined : { pool: poolFromRecord(ref, read.value, key, STORE_NAME), version: read.version };
    },
    async writePool(ref: PoolRef, pool: Pool, expected: Version | undefined): Promise<Version> {
      const [version] = await transact([{ kind: "pool", ref, pool, expected }], `write ${poolId(ref)}`);
      return version as Version;
    },
    async listPools(): Promise<PoolRef[]> {
      const found = await call("list pools", () => client.getAll().prefix(keys.poolsPrefix).keys());
      return found.flatMap((k) => keys.parsePool(k) ?? []).sort(comparePoolRefs);
    },
    async readClaim(ref: ClaimRef): Promise<StoredClaim | undefined> {
      const key = keys.claim(ref);
      const read = await readJson(key, `read claim ${claimId(ref)}`);
      return read === undefined ? undefined : { claim: claimFromRecord(read.value, key, STORE_NAME), version: read.version };
    },
    async writeClaim(ref: ClaimRef, claim: Claim, expected: Version | undefined): Promise<Version> {
      const [version] = await transact([{ kind: "claim", ref, claim, expected }], `write claim ${claimId(ref)}`);
      return version as Version;
    },
    async deleteClaim(ref: ClaimRef, expected: Version): Promise<void> {
      await transact([{ kind: "delete-claim", ref, expected }], `delete claim ${claimId(ref)}`);
    },
    async listClaims(network: string): Promise<ClaimRef[]> {
      const found = await call("list claims", () => client.getAll().prefix(keys.claimsPrefix(network)).keys());
      return found
        .flatMap((k) => keys.parseClaim(k) ?? [])
        .filter((r) => r.network === network)
        .sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
    },
    async commit(writes: readonly StoreWrite[]): Promise<Version[]> {
      return transact(writes, "commit");
    },
    async close(): Promise<void> {
      if (owned) client.close();
    },
  } satisfies IpamStore;
  return store;
}
