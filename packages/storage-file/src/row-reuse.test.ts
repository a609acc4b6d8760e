import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { attachmentKey, createIpam, type IpamStore, parseRange } from "@ipamkit/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir } from "./fixtures/temp-dir.js";
import { createFileStore } from "./index.js";

// A fresh process re-writes a pool by re-using each line of the file it read as that
// reservation's encoded row. Files laid out by hand must never lose or duplicate a row that way.
const range = parseRange({ range: "10.0.0.0/24" });
const dirOf = (root: string) => join(root, "pools", "_", "10.0.0.0_2F24");
const row = (offset: number, id: string, more = "") => `{"offset":"${offset}","containerId":"${id}","ifName":"eth0"${more}}`;

let tmp: Awaited<ReturnType<typeof makeTempDir>>;
let store: IpamStore;
beforeEach(async () => {
  tmp = await makeTempDir();
  store = createFileStore({ dir: tmp.store });
});
afterEach(async () => {
  await store.close();
  await tmp.remove();
});

async function writeRaw(body: string) {
  await mkdir(dirOf(tmp.store), { recursive: true, mode: 0o700 });
  await writeFile(join(dirOf(tmp.store), "000000000001.json"), `{"cidr":"10.0.0.0/24","network":"","lastOffset":null,${body}}\n`, {
    mode: 0o600,
  });
}

async function afterOneWrite(): Promise<string[]> {
  await createIpam({ store }).allocate({ ranges: [range], key: attachmentKey({ containerId: "new", ifName: "eth0" }) });
  const fresh = createFileStore({ dir: tmp.store });
  const read = await fresh.readPool({ network: "", cidr: "10.0.0.0/24" });
  await fresh.close();
  return read?.pool.reservations().map((r) => `${r.offset}:${r.key.containerId}`) ?? [];
}

describe("re-using the rows of the file read", () => {
  it.each([
    ["two rows on one line", `"reservations":[\n${row(1, "a")},${row(2, "b")}\n]`],
    ["pretty-printed rows", `"reservations":[\n  {\n    "offset": "1", "containerId": "a", "ifName": "eth0"\n  },\n  ${row(2, "b")}\n]`],
    ["everything on one line", `"reservations":[${row(1, "a")},${row(2, "b")}]`],
    ["rows out of order", `"reservations":[\n${row(2, "b")},\n${row(1, "a")}\n]`],
  ])("loses and duplicates nothing with %s", async (_name, body) => {
    await writeRaw(body);
    expect(await afterOneWrite()).toEqual(["1:a", "2:b", "3:new"]);
  });

  it("keeps fields it does not know on rows it re-uses", async () => {
    await writeRaw(`"reservations":[\n${row(1, "a", ',"vendor":"x"')},\n${row(2, "b")}\n]`);
    expect(await afterOneWrite()).toEqual(["1:a", "2:b", "3:new"]);
    const dir = dirOf(tmp.store);
    const latest = (await readdir(dir))
      .filter((n) => n.endsWith(".json"))
      .sort()
      .at(-1) as string;
    expect(await readFile(join(dir, latest), "utf8")).toContain('"vendor":"x"');
  });
});
