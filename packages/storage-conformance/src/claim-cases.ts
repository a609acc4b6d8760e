import { type ClaimRef, parseCidr, readClaimsOf, StoreConflictError } from "@ipamkit/core";
import { expect, it } from "vitest";
import { key, type SuiteContext } from "./context.js";

// The pool every claim here names (the same one as the compare-and-swap cases).
const ref = { network: "", cidr: parseCidr("10.1.0.0/24").text };

/** Claims: create-if-absent, compare-and-swap, conditional delete, stable list, batched reads. */
export function registerClaimCases(ctx: SuiteContext): void {
  it("claims: create-if-absent, compare-and-swap, conditional delete, stable list", async () => {
    const s = ctx.store();
    const c = (address: string) => ({ network: "n1", address });
    const claim = { pool: ref, key: key("a"), podRef: "ns/a" };
    const v1 = await s.writeClaim(c("10.1.0.9"), claim, undefined);
    await expect(s.writeClaim(c("10.1.0.9"), claim, undefined)).rejects.toBeInstanceOf(StoreConflictError);
    const v2 = await s.writeClaim(c("10.1.0.9"), { ...claim, key: key("b") }, v1);
    await expect(s.deleteClaim(c("10.1.0.9"), v1)).rejects.toBeInstanceOf(StoreConflictError);
    expect((await s.readClaim(c("10.1.0.9")))?.claim).toEqual({ ...claim, key: key("b") });
    await s.writeClaim(c("10.1.0.10"), claim, undefined);
    await s.writeClaim(c("10.1.0.1"), claim, undefined);
    await s.writeClaim({ network: "other", address: "10.1.0.2" }, claim, undefined);
    expect((await s.listClaims("n1")).map((r) => r.address)).toEqual(["10.1.0.1", "10.1.0.10", "10.1.0.9"]);
    await s.deleteClaim(c("10.1.0.9"), v2);
    expect(await s.readClaim(c("10.1.0.9"))).toBeUndefined();
    // re-created after delete
    await s.writeClaim(c("10.1.0.9"), claim, undefined);
    expect((await s.listClaims("n1")).map((r) => r.address)).toEqual(["10.1.0.1", "10.1.0.10", "10.1.0.9"]);
  });

  it("reads several claims at once as one by one: in the order asked, absent ones undefined, more than a transaction holds", async () => {
    const s = ctx.store();
    const c = (n: number) => ({ network: "n2", address: `10.1.${Math.floor(n / 250)}.${(n % 250) + 1}` });
    const refs = Array.from({ length: 300 }, (_, n) => c(n));
    // every third one written, each its own key; the rest absent
    for (const [n, r] of refs.entries())
      if (n % 3 === 0) await s.writeClaim(r, { pool: ref, key: key(`k${n}`), podRef: `ns/p${n}` }, undefined);
    const asked = [...refs].reverse();
    const together = await readClaimsOf(s, asked);
    const oneByOne = await Promise.all(asked.map((r) => s.readClaim(r)));
    expect(together).toEqual(oneByOne);
    expect(together.filter((x) => x !== undefined)).toHaveLength(100);
    expect(together[0]).toBeUndefined();
    expect(together[2]?.claim.key).toEqual(key("k297"));
    expect(await readClaimsOf(s, [])).toEqual([]);
  });
}

/** Claims listed with contents (one bulk read, or filled in by reads): each answer what readClaim gives, nothing of other networks, nothing deleted. */
export function registerScanCases(ctx: SuiteContext): void {
  it("lists every claim of the networks asked with contents, each as readClaim reads it, in listClaims' order", async () => {
    const s = ctx.store();
    const c = (network: string, address: string) => ({ network, address });
    const refs = [c("n1", "10.1.0.9"), c("n1", "10.1.0.10"), c("n1", "10.1.0.1"), c("n2", "10.1.0.2"), c("other", "10.1.0.3")];
    for (const [i, r] of refs.entries()) await s.writeClaim(r, { pool: ref, key: key(`k${i}`), podRef: `ns/p${i}` }, undefined);
    const v = await s.writeClaim(
      refs[0] as ClaimRef,
      { pool: ref, key: key("again"), podRef: "ns/again" },
      (await s.readClaim(refs[0] as ClaimRef))?.version,
    );
    await s.deleteClaim(refs[1] as ClaimRef, (await s.readClaim(refs[1] as ClaimRef))?.version as string);
    const scanned = await s.listClaims(["n2", "n1", "n2", "absent"], { contents: true });
    expect(scanned.map((x) => `${x.ref.network}/${x.ref.address}`)).toEqual(["n2/10.1.0.2", "n1/10.1.0.1", "n1/10.1.0.9"]);
    for (const x of scanned) expect(x.stored).toEqual(await s.readClaim(x.ref));
    expect(scanned[2]?.stored).toEqual({ claim: { pool: ref, key: key("again"), podRef: "ns/again" }, version: v });
    expect(await s.listClaims([], { contents: true })).toEqual([]);
  });
}
