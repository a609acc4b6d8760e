/** Requests counted by the store's server, by verb and kind (`update ippools`) or, on etcd, by RPC (`Txn`). */
export type RequestCounts = Record<string, number>;

/** The simulation's own requests (its Pod objects), not the IPAM's: `… pods` and `… pods/status`. */
export const isPodRequest = (key: string): boolean => / pods(\/|$)/.test(key);

/** The IPAM's share of some counts: every key but the simulation's pods. */
export function ipamShare(counts: RequestCounts): RequestCounts {
  return Object.fromEntries(Object.entries(counts).filter(([key]) => !isPodRequest(key)));
}

/** The total of some counts. */
export const totalOf = (counts: RequestCounts): number => Object.values(counts).reduce((sum, n) => sum + n, 0);
