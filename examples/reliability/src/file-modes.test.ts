import { chmodSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { useNode } from "../../cni-plugin/test/node-files.js";
import { scratchDir } from "../test/campaign.js";

// a node without a flat file
useNode("/nonexistent");

import { runBinary } from "../test/subprocess.js";

// The file-store part of the security review (RELIABILITY.md), through the built binary: what the
// plugin creates is its own alone (directories 0700, files 0600), and a data_dir that others can
// write to is refused (103) before anything is read or written there.

const env = (id: string) => ({
  CNI_COMMAND: "ADD",
  CNI_CONTAINERID: id,
  CNI_IFNAME: "net1",
  CNI_NETNS: "/var/run/netns/x",
  CNI_PATH: "/opt/cni/bin",
});
const conf = (dataDir: string) =>
  Buffer.from(
    JSON.stringify({
      cniVersion: "1.1.0",
      name: "modes",
      // two overlapping ranges: pools and claims are both written
      ipam: {
        type: "ipamkit",
        range: "10.69.0.0/24",
        ipRanges: [{ range: "10.69.0.0/25" }],
        data_dir: dataDir,
      },
    }),
  );

function walk(path: string, out: { path: string; mode: number; dir: boolean }[] = []) {
  for (const name of readdirSync(path)) {
    const child = join(path, name);
    const st = statSync(child);
    out.push({ path: child, mode: st.mode & 0o7777, dir: st.isDirectory() });
    if (st.isDirectory()) walk(child, out);
  }
  return out;
}

it("the store the binary creates: every directory 0700, every file 0600, owned by the caller", async () => {
  const dir = join(scratchDir("modes"), "store");
  for (const id of ["m1", "m2"]) expect((await runBinary(env(id), conf(dir), { boundMs: 30_000 })).exitCode).toBe(0);
  const entries = [{ path: dir, mode: statSync(dir).mode & 0o7777, dir: true }, ...walk(dir)];
  expect(entries.filter((e) => e.dir).length).toBeGreaterThan(4);
  expect(entries.filter((e) => !e.dir).length).toBeGreaterThan(2);
  expect(entries.filter((e) => e.mode !== (e.dir ? 0o700 : 0o600)).map((e) => `${e.path} ${e.mode.toString(8)}`)).toEqual([]);
});

for (const mode of [0o777, 0o770, 0o1777]) {
  it(`a data_dir of mode ${mode.toString(8)} is refused with 103 naming it, and nothing is written there`, async () => {
    const dir = join(scratchDir("modes"), "store");
    mkdirSync(dir);
    chmodSync(dir, mode);
    const r = await runBinary(env("m1"), conf(dir), { boundMs: 30_000 });
    expect(r.exitCode).toBe(1);
    const answer = JSON.parse(r.stdout) as { code: number; msg: string };
    expect(answer.code).toBe(103);
    expect(answer.msg).toContain(dir);
    expect(readdirSync(dir)).toEqual([]);
  });
}
