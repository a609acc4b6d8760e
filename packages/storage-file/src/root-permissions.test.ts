import { chmod, chown, mkdir, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { attachmentKey, Pool, parseCidr, StoreAccessDeniedError } from "@ipamkit/core";
import { afterEach, beforeEach, expect, it } from "vitest";
import { makeTempDir } from "./fixtures/temp-dir.js";
import { createFileStore } from "./index.js";

// Found by the security review (RELIABILITY.md): the store created its root 0700, but used an
// existing root whatever its mode — a world-writable data_dir let any local user plant or remove
// reservations (hand out an address twice). Such a root is now refused, before anything is read
// or written.

let tmp: Awaited<ReturnType<typeof makeTempDir>>;
beforeEach(async () => {
  tmp = await makeTempDir();
});
afterEach(() => tmp.remove());

const ref = { network: "", cidr: "10.64.0.0/24" };
const pool = () => Pool.fromReservations(parseCidr(ref.cidr), [{ offset: 1n, key: attachmentKey({ containerId: "a", ifName: "net1" }) }]);

for (const mode of [0o777, 0o775, 0o757, 0o1777]) {
  it(`an existing root with mode ${mode.toString(8)} (writable by others) is refused for reads and writes, and left untouched`, async () => {
    await mkdir(tmp.store);
    await chmod(tmp.store, mode);
    const store = createFileStore({ dir: tmp.store });
    for (const call of [() => store.readPool(ref), () => store.writePool(ref, pool(), undefined), () => store.listPools()]) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StoreAccessDeniedError);
      expect((error as Error).message).toContain(tmp.store);
      expect((error as Error).message).toContain(mode.toString(8).padStart(4, "0"));
    }
    expect(await readdir(tmp.store)).toEqual([]);
    expect((await stat(tmp.store)).mode & 0o7777).toBe(mode);
  });
}

it("an existing root owned by another user is refused", async () => {
  if (process.getuid?.() !== 0) throw new Error("this test changes a directory's owner: it needs root, as the CNI plugin runs");
  await mkdir(tmp.store, { mode: 0o700 });
  await chown(tmp.store, 65534, 65534);
  const error = await createFileStore({ dir: tmp.store })
    .readPool(ref)
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(error).toBeInstanceOf(StoreAccessDeniedError);
  expect((error as Error).message).toContain("owned by uid 65534");
});

it("an existing root of mode 0755 or 0700 owned by this user is used, and the store's own root is 0700", async () => {
  for (const [dir, mode] of [
    [join(tmp.dir, "a"), 0o755],
    [join(tmp.dir, "b"), 0o700],
  ] as const) {
    await mkdir(dir);
    await chmod(dir, mode);
    const store = createFileStore({ dir });
    await store.writePool(ref, pool(), undefined);
    expect((await store.readPool(ref))?.pool.size).toBe(1);
  }
  const own = createFileStore({ dir: tmp.store });
  await own.writePool(ref, pool(), undefined);
  expect((await stat(tmp.store)).mode & 0o777).toBe(0o700);
});
