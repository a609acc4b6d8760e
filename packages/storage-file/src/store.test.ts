import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describeStoreConformance } from "@ipamkit/storage-conformance";
import { makeTempDir } from "./fixtures/temp-dir.js";
import { createFileStore } from "./index.js";

const temps: (() => Promise<void>)[] = [];
const roots = new WeakMap<object, string>();

describeStoreConformance({
  name: "storage-file",
  create: async () => {
    const tmp = await makeTempDir();
    temps.push(tmp.remove);
    const store = createFileStore({ dir: tmp.store });
    roots.set(store, tmp.store);
    return store;
  },
  cleanup: async () => {
    await Promise.all(temps.splice(0).map((remove) => remove()));
  },
  // Rewrites the latest generation with two reservations at one offset (valid JSON, invalid pool).
  corruptPool: async (store, ref) => {
    const root = roots.get(store);
    if (root === undefined) throw new Error("not a store of this test");
    const network = ref.network === "" ? "_" : ref.network;
    const dir = join(root, "pools", network, ref.cidr.replaceAll("/", "_2F"));
    const latest = (await readdir(dir))
      .filter((n) => n.endsWith(".json"))
      .sort()
      .at(-1) as string;
    const row = (id: string) => `{"offset":"5","containerId":"${id}","ifName":"eth0"}`;
    await writeFile(
      join(dir, latest),
      `{"cidr":${JSON.stringify(ref.cidr)},"network":${JSON.stringify(ref.network)},"lastOffset":null,"reservations":[${row("a")},${row("b")}]}\n`,
    );
  },
});
