import { ipAt } from "./ip.js";
import type { Assigned, ReleaseInput } from "./ipam.js";
import { type IpamContext, refFor } from "./ipam-context.js";

/** The reservation of this key in each range (undefined where none, or kept: held by no attachment). */
export async function lookupEach({ store }: IpamContext, input: ReleaseInput): Promise<(Assigned | undefined)[]> {
  return Promise.all(
    input.ranges.map(async (range) => {
      const ref = refFor(input.network, range, input.node);
      const stored = await store.readPool(ref);
      const reservation = stored?.pool.forKey(input.key);
      if (reservation === undefined || reservation.releasedAt !== undefined) return undefined; // kept: held by no attachment
      return { pool: ref, range, address: ipAt(range.cidr, reservation.offset), reservation, reused: true };
    }),
  );
}
