import type { AllocationPolicy } from "./allocator.js";
import type { Range } from "./range.js";
import type { RetryOptions } from "./retry.js";
import type { IpamStore, PoolRef } from "./store.js";

/** What `createIpam`'s paths share, built once from its options (see `IpamOptions`). */
export interface IpamContext {
  /** The store, behind the pool cache when one is given. */
  readonly store: IpamStore;
  /** Overlapping-range protection: every address also claimed under its network. */
  readonly protect: boolean;
  /** Options for the one retry helper; its `counter` collects conflicts. */
  readonly retry: RetryOptions;
  /** Clock for creation and keep times. */
  readonly now: () => Date;
  /** Default allocation policy (undefined: "lowest-free"). */
  readonly policy: AllocationPolicy | undefined;
  /** The store's `capabilities.entryWrites`. */
  readonly entryWrites: boolean;
  /** The store's `capabilities.transactions`. */
  readonly transactions: boolean;
}

/** The pool of `range` in `network`; with `node`, that node's pool of it (a node's slice, see `sliceRange`). */
export const refFor = (network: string | undefined, range: Range, node?: string): PoolRef =>
  node === undefined ? { network: network ?? "", cidr: range.cidr.text } : { network: network ?? "", cidr: range.cidr.text, node };
