import { mkdir, readdir, readFile, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type IpamStore, PoolCorruptError, StoreConflictError, StoreCorruptError, StoreUnavailableError } from "@ipamkit/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { claim, claimRef, gens, ids, latestFile, openTempStore, pool, poolDir, ref } from "./fixtures/file-store.js";
import type { makeTempDir } from "./fixtures/temp-dir.js";
import { createFileStore } from "./index.js";

// Corrupt generations, a crashed writer's temp files, stray entries and other I/O errors; the rest is in file-store.test.ts.

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

  it("skips stray entries in the tree when listing", async () => {
    await store.writePool(ref, pool([1, "a"]), undefined);
    await store.writeClaim(claimRef, claim, undefined);
    await mkdir(join(root, "pools", "lost+found"), { recursive: true });
    await mkdir(join(root, "pools", "_", "NOT-ENCODED"), { recursive: true });
    await writeFile(join(root, "claims", "_", "README"), "hi");
    expect(await store.listPools()).toEqual([ref]);
    expect(await store.listClaims("")).toEqual([claimRef]);
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
});
