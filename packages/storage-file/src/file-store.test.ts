import { mkdir, readdir, readFile, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  attachmentKey,
  createIpam,
  type IpamStore,
  Pool,
  PoolCorruptError,
  parseCidr,
  parseRange,
  StoreConflictError,
  StoreCorruptError,
  StoreUnavailableError,
} from "@ipamkit/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir } from "./fixtures/temp-dir.js";
import { createFileStore, DEFAULT_FILE_STORE_DIR, STORE_NAME } from "./index.js";

const cidr = parseCidr("10.0.0.0/24");
const ref = { network: "", cidr: cidr.text };
const poolDir = (root: string) => join(root, "pools", "_", "10.0.0.0_2F24");
const key = (containerId: string) => attachmentKey({ containerId, ifName: "eth0" });
const pool = (...ids: [number, string][]) =>
  Pool.fromReservations(
    cidr,
    ids.map(([offset, id]) => ({ offset: BigInt(offset), key: key(id) })),
  );
const ids = (p: Pool | undefined) => p?.reservations().map((r) => `${r.offset}:${r.key.containerId}`);
const gens = async (dir: string) => (await readdir(dir)).filter((n) => /^\d{12}\.json$/.test(n)).sort();
const latestFile = async (dir: string) => join(dir, (await gens(dir)).at(-1) as string);
const claimRef = { network: "", address: "10.0.0.5" };
const claim = { pool: ref, key: key("a"), podRef: "ns/a" };

let tmp: Awaited<ReturnType<typeof makeTempDir>>;
let root: string;
let store: IpamStore;

beforeEach(async () => {
  tmp = await makeTempDir();
  root = tmp.store;
  store = createFileStore({ dir: root });
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

  describe("corruption", () => {
    const truncations = [
      ["truncated", (text: string) => text.slice(0, Math.floor(text.length / 2))],
      ["empty", () => ""],
      ["not an object", () => "[1,2]\n"],
      ["wrong shape", () => '{"cidr":"10.0.0.0/24","network":"","lastOffset":null,"reservations":{}}\n'],
      [
        "bad offset",
        () => '{"cidr":"10.0.0.0/24","network":"","lastOffset":null,"reservations":[{"offset":"-1","containerId":"a","ifName":"eth0"}]}\n',
      ],
      [
        "numeric offset",
        () => '{"cidr":"10.0.0.0/24","network":"","lastOffset":null,"reservations":[{"offset":1,"containerId":"a","ifName":"eth0"}]}\n',
      ],
      [
        "bad key",
        () => '{"cidr":"10.0.0.0/24","network":"","lastOffset":null,"reservations":[{"offset":"1","containerId":"","ifName":"eth0"}]}\n',
      ],
      ["bad cidr", () => '{"cidr":"10.0.0.0/33","network":"","lastOffset":null,"reservations":[]}\n'],
      ["other network", () => '{"cidr":"10.0.0.0/24","network":"blue","lastOffset":null,"reservations":[]}\n'],
      ["bad lastOffset", () => '{"cidr":"10.0.0.0/24","network":"","lastOffset":"x","reservations":[]}\n'],
      ["bad tombstone", () => '{"deleted":false}\n'],
    ] as const;

    for (const [what, corrupt] of truncations) {
      it(`${what} latest generation: StoreCorruptError naming the file; a write does not replace it`, async () => {
        const v1 = await store.writePool(ref, pool([1, "a"]), undefined);
        const v2 = await store.writePool(ref, pool([1, "a"], [2, "b"]), v1);
        expect(ids((await store.readPool(ref))?.pool)).toEqual(["1:a", "2:b"]); // cached now
        const file = await latestFile(poolDir(root));
        const bytes = corrupt(await readFile(file, "utf8"));
        await writeFile(file, bytes);
        for (const s of [store, createFileStore({ dir: root })]) {
          const err = await s.readPool(ref).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(StoreCorruptError);
          expect((err as StoreCorruptError).code).toBe("STORE_CORRUPT");
          expect((err as Error).message).toContain(file);
          expect((err as Error).message).toContain("[storage-file]");
          for (const expected of [v2, undefined]) {
            const werr = await s.writePool(ref, pool([3, "c"]), expected).catch((e: unknown) => e);
            expect(werr).toBeInstanceOf(StoreCorruptError);
            expect((werr as Error).message).toContain(file);
          }
        }
        expect(await readFile(file, "utf8")).toBe(bytes);
        expect(await readdir(poolDir(root))).toEqual(["000000000001.json", "000000000002.json"]);
      });
    }

    it("an invariant-breaking pool (two reservations at one offset) is PoolCorruptError naming the file", async () => {
      await store.writePool(ref, pool([1, "a"]), undefined);
      const file = await latestFile(poolDir(root));
      const row = (id: string) => `{"offset":"5","containerId":"${id}","ifName":"eth0"}`;
      const bytes = `{"cidr":"10.0.0.0/24","network":"","lastOffset":null,"reservations":[${row("a")},${row("b")}]}\n`;
      await writeFile(file, bytes);
      const err = await store.readPool(ref).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PoolCorruptError);
      expect((err as PoolCorruptError).pool).toBe("10.0.0.0/24");
      expect((err as Error).message).toContain(file);
      expect((err as Error).message).toContain("two reservations at 10.0.0.5");
      await expect(store.writePool(ref, pool([3, "c"]), "1")).rejects.toBeInstanceOf(PoolCorruptError);
      expect(await readFile(file, "utf8")).toBe(bytes);
    });

    it("a corrupt claim is StoreCorruptError; it is still listed, and not overwritten or deleted", async () => {
      const v1 = await store.writeClaim(claimRef, claim, undefined);
      const file = await latestFile(join(root, "claims", "_", "10.0.0.5"));
      await writeFile(file, '{"pool":{"network":""},"key":{"containerId":"a","ifName":"eth0"}}\n');
      const err = await store.readClaim(claimRef).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreCorruptError);
      expect((err as Error).message).toContain(file);
      expect(await store.listClaims("")).toEqual([claimRef]);
      await expect(store.writeClaim(claimRef, claim, v1)).rejects.toBeInstanceOf(StoreCorruptError);
      await expect(store.deleteClaim(claimRef, v1)).rejects.toBeInstanceOf(StoreCorruptError);
      await expect(store.writeClaim(claimRef, claim, undefined)).rejects.toBeInstanceOf(StoreCorruptError);
      expect(await gens(join(root, "claims", "_", "10.0.0.5"))).toEqual(["000000000001.json"]);
    });

    it("re-reads a generation modified in place even though it was cached", async () => {
      await store.writePool(ref, pool([1, "a"]), undefined);
      expect(ids((await store.readPool(ref))?.pool)).toEqual(["1:a"]);
      const file = await latestFile(poolDir(root));
      const text = (await readFile(file, "utf8")).replace('"containerId":"a"', '"containerId":"q"');
      await writeFile(file, text);
      expect(ids((await store.readPool(ref))?.pool)).toEqual(["1:q"]);
    });
  });

  it("a leftover temp file (a writer that crashed before linking) is invisible and harmless", async () => {
    const v1 = await store.writePool(ref, pool([1, "a"]), undefined);
    const dir = poolDir(root);
    await writeFile(join(dir, ".tmp-999999-deadbeefcafe"), '{"cidr":"10.0.0.0/24","network":"","lastOff');
    await writeFile(join(dir, ".tmp-999998-0123456789ab"), "{}");
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(join(dir, ".tmp-999998-0123456789ab"), old, old);
    expect((await store.readPool(ref))?.version).toBe(v1);
    expect(await store.listPools()).toEqual([ref]);
    const v2 = await store.writePool(ref, pool([1, "a"], [2, "b"]), v1);
    expect(ids((await store.readPool(ref))?.pool)).toEqual(["1:a", "2:b"]);
    expect(v2).toBe("2");
    // The fresh one may still belong to a live writer: kept. The hour-old one is collected.
    expect((await readdir(dir)).sort()).toEqual([".tmp-999999-deadbeefcafe", "000000000001.json", "000000000002.json"]);
  });

  it("a directory holding only a temp file is an absent object", async () => {
    const dir = poolDir(root);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, ".tmp-1-aaaaaaaaaaaa"), "partial");
    expect(await store.readPool(ref)).toBeUndefined();
    expect(await store.listPools()).toEqual([]);
    await expect(store.writePool(ref, pool([1, "a"]), "1")).rejects.toBeInstanceOf(StoreConflictError);
    expect(await store.writePool(ref, pool([1, "a"]), undefined)).toBe("1");
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

  it("skips stray entries in the tree when listing", async () => {
    await store.writePool(ref, pool([1, "a"]), undefined);
    await store.writeClaim(claimRef, claim, undefined);
    await mkdir(join(root, "pools", "lost+found"), { recursive: true });
    await mkdir(join(root, "pools", "_", "NOT-ENCODED"), { recursive: true });
    await writeFile(join(root, "claims", "_", "README"), "hi");
    expect(await store.listPools()).toEqual([ref]);
    expect(await store.listClaims("")).toEqual([claimRef]);
  });

  it("lists only pools and claims whose latest generation is not a tombstone, sorted", async () => {
    for (const address of ["10.0.0.9", "10.0.0.10", "10.0.0.1", "10.0.0.100"]) {
      await store.writeClaim({ network: "n", address }, claim, undefined);
    }
    const v = (await store.readClaim({ network: "n", address: "10.0.0.10" }))?.version as string;
    await store.deleteClaim({ network: "n", address: "10.0.0.10" }, v);
    expect((await store.listClaims("n")).map((c) => c.address)).toEqual(["10.0.0.1", "10.0.0.100", "10.0.0.9"]);
  });

  it("other I/O errors are StoreUnavailableError with the cause", async () => {
    await writeFile(join(tmp.dir, "a-file"), "x");
    const broken = createFileStore({ dir: join(tmp.dir, "a-file") });
    for (const op of [
      () => broken.readPool(ref),
      () => broken.writePool(ref, pool(), undefined),
      () => broken.listPools(),
      () => broken.writeClaim(claimRef, claim, undefined),
      () => broken.listClaims(""),
    ]) {
      const err = await op().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect((err as StoreUnavailableError).retryable).toBe(true);
      expect((err as Error).message).toContain("[storage-file]");
      expect((err as { cause?: { code?: string } }).cause?.code).toBe("ENOTDIR");
    }
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
