import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { createIpam, type IpamStore, Pool, parseCidr, parseRange, StoreConflictError } from "@ipamkit/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cidr, claim, claimRef, gens, ids, key, latestFile, openTempStore, pool, poolDir, ref } from "./fixtures/file-store.js";
import type { makeTempDir } from "./fixtures/temp-dir.js";
import { createFileStore, DEFAULT_FILE_STORE_DIR, STORE_NAME } from "./index.js";

// Corrupt files, crash leftovers, stray entries and other I/O errors are in file-store.faults.test.ts.

let tmp: Awaited<ReturnType<typeof makeTempDir>>;
let root: string;
let store: IpamStore;

beforeEach(async () => {
  ({ tmp, root, store } = await openTempStore());
});

afterEach(async () => {
  await store.close();
  await tmp.remove();
});

describe("createFileStore", () => {
  it("names itself, declares cross-process but not distributed, and defaults to /var/lib/cni/ipamkit", () => {
    expect(STORE_NAME).toBe("storage-file");
    expect(store.name).toBe(STORE_NAME);
    expect(store.capabilities).toEqual({
      crossProcess: true,
      distributed: false,
      transactions: false,
      entryWrites: false,
      batchReads: false,
      bulkLists: false,
      nodePools: false,
    });
    expect(DEFAULT_FILE_STORE_DIR).toBe("/var/lib/cni/ipamkit");
  });

  it("reads and lists nothing (and creates nothing) when the root does not exist", async () => {
    expect(await store.readPool(ref)).toBeUndefined();
    expect(await store.readClaim(claimRef)).toBeUndefined();
    expect(await store.listPools()).toEqual([]);
    expect(await store.listClaims("")).toEqual([]);
    await expect(stat(root)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("stores the documented layout: zero-padded generations, decimal-string offsets", async () => {
    const written = Pool.fromReservations(
      cidr,
      [
        { offset: 7n, key: key("b"), podRef: "ns/b", podUid: "u-1", createdAt: "2026-01-01T00:00:00.000Z", extra: { note: "x" } },
        { offset: 2n, key: key("a") },
      ],
      { lastOffset: 7n },
    );
    const version = await store.writePool(ref, written, undefined);
    expect(version).toBe("1");
    const file = join(poolDir(root), "000000000001.json");
    const json = JSON.parse(await readFile(file, "utf8"));
    expect(json).toMatchObject({
      cidr: "10.0.0.0/24",
      network: "",
      lastOffset: "7",
      reservations: [
        { offset: "2", containerId: "a", ifName: "eth0" },
        {
          offset: "7",
          containerId: "b",
          ifName: "eth0",
          podRef: "ns/b",
          podUid: "u-1",
          createdAt: "2026-01-01T00:00:00.000Z",
          extra: { note: "x" },
        },
      ],
    });
    expect(json.commit).toMatch(/^[0-9a-f]{16}$/);
    expect(json.ancestry).toEqual([]);
    const read = await store.readPool(ref);
    expect(read?.version).toBe("1");
    expect(read?.pool.reservations()).toEqual(written.reservations());
    expect(read?.pool.lastOffset).toBe(7n);
    expect(read?.pool.name).toBe("10.0.0.0/24");

    await store.writeClaim(claimRef, claim, undefined);
    const claimJson = JSON.parse(await readFile(join(root, "claims", "_", "10.0.0.5", "000000000001.json"), "utf8"));
    expect(claimJson).toMatchObject({
      pool: { network: "", cidr: "10.0.0.0/24" },
      key: { containerId: "a", ifName: "eth0" },
      podRef: "ns/a",
    });
  });

  it("changes the version on every write, even with identical content", async () => {
    const p = pool([1, "a"]);
    const versions = [await store.writePool(ref, p, undefined)];
    for (let i = 0; i < 5; i++) versions.push(await store.writePool(ref, p, versions.at(-1)));
    expect(new Set(versions).size).toBe(6);
    expect(versions).toEqual(["1", "2", "3", "4", "5", "6"]);
    expect((await store.readPool(ref))?.version).toBe("6");
  });

  it("a stale write conflicts and leaves content, version and files unchanged", async () => {
    const v1 = await store.writePool(ref, pool([1, "a"]), undefined);
    const v2 = await store.writePool(ref, pool([1, "a"], [2, "b"]), v1);
    const before = await gens(poolDir(root));
    for (const expected of [v1, undefined, "99", "0", "abc", "", "02", " 2"]) {
      const err = await store.writePool(ref, pool([9, "z"]), expected).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreConflictError);
      expect((err as Error).message).toContain("[storage-file]");
      expect((err as Error).message).toContain("pool 10.0.0.0/24");
    }
    expect(await gens(poolDir(root))).toEqual(before);
    expect(await readdir(poolDir(root))).toEqual(before); // no temp file left behind either
    const read = await store.readPool(ref);
    expect(read?.version).toBe(v2);
    expect(ids(read?.pool)).toEqual(["1:a", "2:b"]);
  });

  it("a stale version whose next generation was already garbage-collected still conflicts", async () => {
    const other = createFileStore({ dir: root });
    const v1 = await store.writePool(ref, pool([1, "a"]), undefined);
    let v = v1;
    for (let i = 0; i < 4; i++) v = await other.writePool(ref, pool([1, "a"], [10 + i, `o${i}`]), v);
    expect(await gens(poolDir(root))).toEqual(["000000000004.json", "000000000005.json"]);
    await expect(store.writePool(ref, pool([9, "z"]), v1)).rejects.toBeInstanceOf(StoreConflictError);
    expect(await gens(poolDir(root))).toEqual(["000000000004.json", "000000000005.json"]);
    expect((await store.readPool(ref))?.version).toBe("5");
  });

  it("two store instances (as two processes would) see each other's writes", async () => {
    const other = createFileStore({ dir: root });
    const v1 = await store.writePool(ref, pool([1, "a"]), undefined);
    expect(ids((await other.readPool(ref))?.pool)).toEqual(["1:a"]);
    const v2 = await other.writePool(ref, pool([1, "a"], [2, "b"]), v1);
    expect((await store.readPool(ref))?.version).toBe(v2);
    expect(ids((await store.readPool(ref))?.pool)).toEqual(["1:a", "2:b"]);
  });

  it("creates directories 0700 and files 0600, the root included", async () => {
    await store.writePool(ref, pool([1, "a"]), undefined);
    await store.writeClaim(claimRef, claim, undefined);
    const dirs = [
      tmp.store,
      join(root, "pools"),
      join(root, "pools", "_"),
      poolDir(root),
      join(root, "claims"),
      join(root, "claims", "_"),
      join(root, "claims", "_", "10.0.0.5"),
    ];
    for (const d of dirs) {
      const st = await stat(d);
      expect(st.isDirectory()).toBe(true);
      expect((st.mode & 0o777).toString(8)).toBe("700");
    }
    for (const f of [await latestFile(poolDir(root)), await latestFile(join(root, "claims", "_", "10.0.0.5"))]) {
      expect(((await stat(f)).mode & 0o777).toString(8)).toBe("600");
    }
  });

  it("creates missing parents of the root as ordinary directories and the root itself 0700", async () => {
    const nested = createFileStore({ dir: join(tmp.dir, "a", "b", "store") });
    await nested.writeClaim(claimRef, claim, undefined);
    expect(((await stat(join(tmp.dir, "a", "b", "store"))).mode & 0o777).toString(8)).toBe("700");
    expect((await stat(join(tmp.dir, "a", "b"))).isDirectory()).toBe(true);
    expect((await nested.readClaim(claimRef))?.claim).toEqual(claim);
  });

  it("garbage-collects: after many writes only the latest two generations remain", async () => {
    let v: string | undefined;
    for (let i = 0; i < 200; i++) v = await store.writePool(ref, pool([1, "a"], [2 + (i % 50), "b"]), v);
    expect(v).toBe("200");
    expect(await readdir(poolDir(root))).toEqual(["000000000199.json", "000000000200.json"]);
    let c = await store.writeClaim(claimRef, claim, undefined);
    for (let i = 0; i < 50; i++) {
      await store.deleteClaim(claimRef, c);
      c = await store.writeClaim(claimRef, claim, undefined);
    }
    expect(await readdir(join(root, "claims", "_", "10.0.0.5"))).toEqual(["000000000100.json", "000000000101.json"]);
  });

  it("delete and re-create a claim; stale versions of a deleted claim conflict", async () => {
    const v1 = await store.writeClaim(claimRef, claim, undefined);
    await expect(store.deleteClaim(claimRef, "7")).rejects.toBeInstanceOf(StoreConflictError);
    await store.deleteClaim(claimRef, v1);
    expect(await store.readClaim(claimRef)).toBeUndefined();
    expect(await store.listClaims("")).toEqual([]);
    const tombstone = await latestFile(join(root, "claims", "_", "10.0.0.5"));
    expect(JSON.parse(await readFile(tombstone, "utf8"))).toMatchObject({ deleted: true });
    await expect(store.deleteClaim(claimRef, v1)).rejects.toBeInstanceOf(StoreConflictError);
    await expect(store.deleteClaim(claimRef, "2")).rejects.toBeInstanceOf(StoreConflictError); // the tombstone's own number
    await expect(store.writeClaim(claimRef, claim, v1)).rejects.toBeInstanceOf(StoreConflictError);
    await expect(store.writeClaim(claimRef, claim, "2")).rejects.toBeInstanceOf(StoreConflictError);
    const other = { ...claim, key: key("b") };
    const v3 = await store.writeClaim(claimRef, other, undefined);
    expect(v3).toBe("3");
    expect(await store.readClaim(claimRef)).toEqual({ claim: other, version: "3" });
    expect(await store.listClaims("")).toEqual([claimRef]);
    await expect(store.writeClaim(claimRef, claim, undefined)).rejects.toBeInstanceOf(StoreConflictError);
    await expect(store.deleteClaim({ network: "", address: "10.0.0.77" }, "1")).rejects.toBeInstanceOf(StoreConflictError);
  });

  it("encodes network names, CIDRs and addresses reversibly: '', case, unicode, IPv6, odd characters", async () => {
    const networks = ["", "_", "Blue", "blue", "a/b", "..", ".", "net work%2F", "ünï", "x".repeat(80)];
    const refs = networks.flatMap((network) => [
      { network, cidr: "10.0.0.0/24" },
      { network, cidr: "2001:db8::/64" },
    ]);
    for (const r of refs) await store.writePool(r, Pool.empty(parseCidr(r.cidr)), undefined);
    const listed = await store.listPools();
    expect(listed).toHaveLength(refs.length);
    expect(new Set(listed.map((r) => JSON.stringify(r)))).toEqual(new Set(refs.map((r) => JSON.stringify(r))));
    for (const r of refs) expect((await store.readPool(r))?.pool.cidr.text).toBe(r.cidr);
    for (const name of await readdir(join(root, "pools"))) {
      expect(name).toMatch(/^(?:[a-z0-9.-]|_[0-9A-F]{2}|_$)+$/);
      expect(name.startsWith(".")).toBe(false);
    }
    const v6 = { network: "Blue", address: "2001:db8::a" };
    await store.writeClaim(v6, claim, undefined);
    expect(await store.listClaims("Blue")).toEqual([v6]);
    expect(await store.listClaims("blue")).toEqual([]);
  });

  it("rejects a name too long for a file name, or not well-formed, with a non-retryable error", async () => {
    for (const network of ["n".repeat(300), "bad\uD800"]) {
      const err = await store.writePool({ network, cidr: "10.0.0.0/24" }, pool(), undefined).catch((e: unknown) => e);
      expect((err as { code?: string }).code).toBe("INVALID_REQUEST");
      expect((err as { retryable?: boolean }).retryable).toBe(false);
      expect((err as Error).message).toContain("[storage-file]");
    }
  });

  it("lists only pools and claims whose latest generation is not a tombstone, sorted", async () => {
    for (const address of ["10.0.0.9", "10.0.0.10", "10.0.0.1", "10.0.0.100"]) {
      await store.writeClaim({ network: "n", address }, claim, undefined);
    }
    const v = (await store.readClaim({ network: "n", address: "10.0.0.10" }))?.version as string;
    await store.deleteClaim({ network: "n", address: "10.0.0.10" }, v);
    expect((await store.listClaims("n")).map((c) => c.address)).toEqual(["10.0.0.1", "10.0.0.100", "10.0.0.9"]);
  });

  it("works under createIpam: allocate, release, claims dropped", async () => {
    const ipam = createIpam({ store });
    const range = parseRange({ range: "10.0.0.0/24" });
    const [a] = await ipam.allocate({ network: "", ranges: [range], key: key("c1") });
    const [b] = await ipam.allocate({ network: "", ranges: [range], key: key("c2") });
    expect(a?.address).not.toEqual(b?.address);
    expect((await store.listClaims("")).length).toBe(2);
    await ipam.release({ network: "", ranges: [range], key: key("c1") });
    expect((await store.listClaims("")).length).toBe(1);
    expect(ids((await store.readPool(ref))?.pool)).toEqual([`${b?.reservation.offset}:c2`]);
  });
});
