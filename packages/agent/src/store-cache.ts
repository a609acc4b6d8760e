import { statSync } from "node:fs";
import type { IpamConfig } from "@ipamkit/cni";
import { delegatingStore, IpamCache, type IpamStore, StoreConflictError } from "@ipamkit/core";

/** The backend a config's store talks to: the same across a kubeconfig's rewrites. Reads no file. */
function storeFamily(config: IpamConfig): string {
  switch (config.datastore) {
    case "file":
      return `file:${config.dataDir}`;
    case "etcd":
      return `etcd:${JSON.stringify(config.etcd)}`;
    case "kubernetes":
      return `kubernetes:${config.kubernetes.kubeconfig ?? "default"}`;
  }
}

/** Which client a config needs: calls that need the same one share it. */
export function storeIdentity(config: IpamConfig): string {
  const family = storeFamily(config);
  if (config.datastore !== "kubernetes") return family;
  // a rewritten kubeconfig (Whereabouts' token watcher rotates the token) gets a fresh client
  const path = config.kubernetes.kubeconfig;
  let version = "";
  if (path !== undefined) {
    try {
      version = String(statSync(path).mtimeMs);
    } catch {
      version = "missing";
    }
  }
  return `${family}@${version}`;
}

interface Entry {
  store: Promise<IpamStore>;
  /** What this process remembers of the store (claims and pools), given to the allocator of each call. */
  cache: IpamCache;
  users: number;
  retired: boolean;
  family: string;
}

/**
 * Keeps one store (one client, connections kept alive) per identity. A call borrows it through a
 * handle whose `close()` gives it back; a store whose identity moved on (rotated kubeconfig) is
 * closed once its last borrower is done.
 */
export class StoreCache {
  private readonly entries = new Map<string, Entry>();

  /** Compare-and-swap conflicts seen by borrowed stores (with the queue, they come from other nodes). */
  conflicts = 0;

  /** Each store family's latest cache: its successor shares its affinity claims (a rewritten kubeconfig's new client). */
  private readonly latest = new Map<string, IpamCache>();

  constructor(private readonly open: (config: IpamConfig) => Promise<IpamStore>) {}

  async borrow(config: IpamConfig, onClose: () => void): Promise<IpamStore> {
    const identity = storeIdentity(config);
    const family = storeFamily(config);
    let entry = this.entries.get(identity);
    if (entry === undefined) {
      for (const [other, old] of this.entries) {
        if (old.family === family) {
          old.retired = true;
          this.entries.delete(other);
          if (old.users === 0) void this.dispose(old);
        }
      }
      // This long-lived process remembers block-affinity claims once seen (they stay true), the
      // address claims it wrote (a DEL deletes its claim without reading it), and each pool as it
      // last saw it (per-node blocks write their only block at that version without reading it
      // first: the compare-and-swap checks it). It assumes no other writer is absent — direct mode,
      // Whereabouts, the reconciler may write at any time. One core IpamCache per opened store holds
      // all three, the allocator applies it: see its docs and core's DESIGN.md for why each is safe.
      // The affinity claims are shared along the family (one memory per backend, as before).
      const previous = this.latest.get(family);
      const cache = new IpamCache(previous === undefined ? {} : { affinityFrom: previous });
      this.latest.set(family, cache);
      entry = { store: this.open(config), cache, users: 0, retired: false, family };
      this.entries.set(identity, entry);
      // a failed open is not cached: the next call tries again
      entry.store.catch(() => this.entries.get(identity) === entry && this.entries.delete(identity));
    }
    entry.users++;
    let store: IpamStore;
    try {
      store = await entry.store;
    } catch (error) {
      entry.users--;
      throw error;
    }
    const current = entry;
    let returned = false;
    const giveBack = async () => {
      if (returned) return;
      returned = true;
      current.users--;
      onClose();
      if (current.retired && current.users === 0) await this.dispose(current);
    };
    return lend(store, giveBack, () => {
      this.conflicts++;
    });
  }

  /** The cache of the store a config's calls borrow, if it is open: the allocator is given it. */
  cacheOf(config: IpamConfig): IpamCache | undefined {
    return this.entries.get(storeIdentity(config))?.cache;
  }

  async closeAll(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map((e) => this.dispose(e)));
  }

  get size(): number {
    return this.entries.size;
  }

  private async dispose(entry: Entry): Promise<void> {
    try {
      await (await entry.store).close();
    } catch {
      // a store that failed to open or to close has nothing left to release
    }
  }
}

/** The store as the dispatcher sees it: everything delegated, `close()` only gives it back. */
function lend(store: IpamStore, giveBack: () => Promise<void>, onConflict: () => void): IpamStore {
  const counted = async <T>(write: Promise<T>): Promise<T> => {
    try {
      return await write;
    } catch (error) {
      if (error instanceof StoreConflictError) onConflict();
      throw error;
    }
  };
  const overrides: Partial<IpamStore> = {
    writePool: (ref, pool, expected) => counted(store.writePool(ref, pool, expected)),
    writeClaim: (ref, claim, expected) => counted(store.writeClaim(ref, claim, expected)),
    deleteClaim: (ref, expected) => counted(store.deleteClaim(ref, expected)),
    close: giveBack,
  };
  overrides.commit = (writes) => counted(store.commit(writes));
  return delegatingStore(store, overrides);
}
