import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createIpam, type IpamStore } from "@ipamkit/core";
import { createFileStore } from "@ipamkit/storage-file";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { key, lines, NARROW, NET, plantDuplicate, runBin, seedBlocks, seedClean, WIDE } from "./test-support.js";

// The built binary, as a process, on the real file store.
let dir: string;
let store: IpamStore;
let args: string[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-cli-"));
  store = createFileStore({ dir });
  args = ["--data-dir", dir];
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("ipamkit on the file store", () => {
  it("pools: range, network, used / capacity / percent", async () => {
    await seedClean(store);
    const r = await runBin(["pools", ...args, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const { pools } = JSON.parse(r.stdout) as {
      pools: { network: string; pool: string; used: number; capacity: number; percent: number }[];
    };
    expect(pools).toEqual([
      { network: NET, pool: "10.20.0.0/24", used: 2, capacity: 254, percent: 0.8 },
      { network: NET, pool: "10.20.0.0/25", used: 1, capacity: 126, percent: 0.8 },
    ]);
    const text = await runBin(["pools", ...args]);
    expect(lines(text.stdout)[0]).toMatch(/^NETWORK\s+POOL\s+USED\s+CAPACITY\s+USE%/);
    expect(text.stdout).toMatch(/net-a\s+10\.20\.0\.0\/25\s+1\s+126\s+0\.8%/);
  });

  it("pools --config: capacity from the config's range, per-node blocks under their range", async () => {
    await seedBlocks(store);
    const nad = join(dir, "nad.json");
    const ipam = { type: "ipamkit", range: "10.30.0.0/24", network_name: "blocks", node_block_size: 16, datastore: "file", data_dir: dir };
    writeFileSync(
      nad,
      JSON.stringify({
        kind: "NetworkAttachmentDefinition",
        spec: { config: JSON.stringify({ cniVersion: "1.0.0", name: "blocks", type: "macvlan", ipam }) },
      }),
    );
    const r = await runBin(["pools", "--config", nad, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const { pools } = JSON.parse(r.stdout) as { pools: { pool: string; used: number; node?: string; range?: string }[] };
    expect(pools.map((p) => [p.node, p.range, p.used]).sort()).toEqual([
      ["node-1", "10.30.0.0/24", 3],
      ["node-2", "10.30.0.0/24", 3],
    ]);
    const text = await runBin(["pools", "--config", nad]);
    expect(text.stdout).toMatch(/blocks\s+10\.30\.0\.0\/24\s+6\s+\d+\s+[\d.]+%\s+2 block\(s\) claimed/);
    expect(text.stdout).toMatch(/\n\S+\s+ {2}10\.30\.0\.\d+\/28\s+3\s+1[46]\s+[\d.]+%\s+node-1/);
  });

  it("pools without a config: each block with its node, every address its capacity, in address order", async () => {
    await seedBlocks(store);
    const r = await runBin(["pools", ...args, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const { pools } = JSON.parse(r.stdout) as { pools: { pool: string; capacity: number; node?: string }[] };
    expect(pools.map((p) => p.capacity)).toEqual([16, 16]);
    expect(pools.map((p) => p.node).sort()).toEqual(["node-1", "node-2"]);
    const starts = pools.map((p) => Number(p.pool.split("/")[0]?.split(".")[3]));
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
  });

  it("progress on stderr with --progress, none without (stderr is no terminal here)", async () => {
    await seedClean(store);
    const quiet = await runBin(["audit", ...args, "--grace", "0", "--settle", "0"]);
    expect(quiet.stderr).toBe("");
    const loud = await runBin(["audit", ...args, "--grace", "0", "--settle", "0", "--progress"]);
    expect(loud.code).toBe(0);
    expect(lines(loud.stderr)).toEqual(["… read 2 pools, 3 reservations", "… reading the overlapping-range claims of 1 network(s)"]);
  });

  it("--config a Whereabouts flat file: its store and network_name", async () => {
    await seedClean(store);
    const flat = join(dir, "whereabouts.conf");
    writeFileSync(flat, JSON.stringify({ datastore: "file", data_dir: dir, network_name: NET }));
    const r = await runBin(["show", "10.20.0.0/25", "--config", flat, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      network: NET,
      pool: "10.20.0.0/25",
      reservations: [{ address: "10.20.0.3", key: "ctr-c/net1" }],
    });
    const both = await runBin(["pools", "--config", flat, "--data-dir", dir]);
    expect(both.code).toBe(2);
    expect(lines(both.stderr)).toEqual(["error: --config and --data-dir exclude each other: the config names the store"]);
  });

  it("show: a pool's reservations (address, key, pod, age)", async () => {
    await seedClean(store);
    const r = await runBin(["show", `${NET}/10.20.0.0/24`, ...args]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/10\.20\.0\.1\s+ctr-a\/net1\s+default\/pod-a\s+\d+s/);
    expect(r.stdout).toMatch(/10\.20\.0\.2\s+ctr-b\/net1/);
    const missing = await runBin(["show", "10.99.0.0/24", ...args]);
    expect(missing.code).toBe(2);
    expect(lines(missing.stderr)).toEqual(["error: no pool 10.99.0.0/24 (see ipamkit pools)"]);
  });

  it("audit: a clean store exits 0", async () => {
    await seedClean(store);
    const r = await runBin(["audit", ...args, "--grace", "0", "--settle", "0"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^clean: 2 pool\(s\), 3 reservation\(s\); claims checked/);
  });

  it("audit: a duplicate planted across two overlapping pools is reported, exit 1", async () => {
    await seedClean(store);
    await plantDuplicate(store);
    const r = await runBin(["audit", ...args, "--json", "--grace", "0", "--settle", "0"]);
    expect(r.code, r.stderr).toBe(1);
    const report = JSON.parse(r.stdout) as { findings: { kind: string; address?: string; pool?: string; key?: string }[] };
    expect(report.findings).toContainEqual(
      expect.objectContaining({ kind: "held-twice", address: "10.20.0.1", pool: "net-a/10.20.0.0/24, net-a/10.20.0.0/25" }),
    );
    // ctr-a's claim stands; the planted ctr-x has none
    expect(report.findings).toContainEqual(expect.objectContaining({ kind: "claim-names-other-entry", address: "10.20.0.1" }));
    const text = await runBin(["audit", ...args, "--grace", "0"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/held-twice\s+net-a\s+10\.20\.0\.1/);
  });

  it("audit: legacy Whereabouts entries and claims no entry backs", async () => {
    await seedClean(store);
    const ref = { network: NET, cidr: WIDE.cidr.text };
    const stored = await store.readPool(ref);
    if (stored === undefined) throw new Error("seeded pool missing");
    const legacy = { offset: 9n, key: { containerId: "old", ifName: "" }, podRef: "default/old" };
    await store.writePool(ref, stored.pool.with(legacy), stored.version);
    await store.writeClaim({ network: NET, address: "10.20.0.77" }, { pool: ref, key: key("gone") }, undefined);
    const r = await runBin(["audit", ...args, "--json", "--grace", "0", "--settle", "0"]);
    expect(r.code).toBe(1);
    const kinds = (JSON.parse(r.stdout) as { findings: { kind: string; address: string }[] }).findings.map((f) => `${f.kind} ${f.address}`);
    expect(kinds).toContain("legacy-entry 10.20.0.9");
    expect(kinds).toContain("claim-without-entry 10.20.0.77");
  });

  it("release --dry-run changes nothing; release frees exactly the key (and its claim)", async () => {
    await seedClean(store);
    const ref = { network: NET, cidr: WIDE.cidr.text };
    const before = await store.readPool(ref);
    const dry = await runBin(["release", "--key", "ctr-a/net1", ...args, "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/would-release\s+net-a\/10\.20\.0\.0\/24\s+10\.20\.0\.1\s+ctr-a\/net1/);
    expect((await store.readPool(ref))?.version).toBe(before?.version);
    expect(await store.readClaim({ network: NET, address: "10.20.0.1" })).toBeDefined();

    const done = await runBin(["release", "--key", "ctr-a/net1", ...args, "--json"]);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({
      dryRun: false,
      results: [{ pool: "net-a/10.20.0.0/24", address: "10.20.0.1", key: "ctr-a/net1", podRef: "default/pod-a", outcome: "released" }],
    });
    const after = await store.readPool(ref);
    expect(after?.pool.reservations().map((r) => r.key.containerId)).toEqual(["ctr-b"]);
    expect((await store.readPool({ network: NET, cidr: NARROW.cidr.text }))?.pool.size).toBe(1);
    expect(await store.readClaim({ network: NET, address: "10.20.0.1" })).toBeUndefined();
    expect(await store.readClaim({ network: NET, address: "10.20.0.2" })).toBeDefined();

    const again = await runBin(["release", "--key", "ctr-a/net1", ...args]);
    expect(again.code).toBe(1);
    expect(again.stdout).toMatch(/nothing held/);
  });

  it("release of a sticky reservation: kept for its pod first (show says so), freed by a second release", async () => {
    const ipam = createIpam({ store });
    await ipam.allocate({ network: NET, ranges: [WIDE], key: key("sts-0"), podRef: "default/db-0", podUid: "uid-1", sticky: 300 });
    const held = await runBin(["show", `${NET}/10.20.0.0/24`, ...args]);
    expect(held.stdout).toMatch(/10\.20\.0\.1\s+sts-0\/net1\s+default\/db-0\s+\d+s\s+held/);
    const dry = await runBin(["release", "--key", "sts-0/net1", "--network", NET, ...args, "--dry-run", "--json"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect((JSON.parse(dry.stdout) as { results: { outcome: string }[] }).results.map((r) => r.outcome)).toEqual(["would-keep"]);
    const first = await runBin(["release", "--key", "sts-0/net1", "--network", NET, ...args]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^kept\s+net-a\/10\.20\.0\.0\/24\s+10\.20\.0\.1/m);
    const kept = await runBin(["show", `${NET}/10.20.0.0/24`, ...args]);
    expect(kept.stdout).toMatch(/10\.20\.0\.1\s+sts-0\/net1\s+default\/db-0\s+\d+s\s+kept \d+s/);
    const second = await runBin(["release", "--key", "sts-0/net1", "--network", NET, ...args]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/^released\s+net-a\/10\.20\.0\.0\/24\s+10\.20\.0\.1/m);
    expect((await store.readPool({ network: NET, cidr: WIDE.cidr.text }))?.pool.size).toBe(0);
  });

  it("release --ip: refuses an address held in two pools unless --pool names one", async () => {
    await seedClean(store);
    await plantDuplicate(store);
    const ambiguous = await runBin(["release", "--ip", "10.20.0.1", ...args]);
    expect(ambiguous.code).toBe(2);
    expect(lines(ambiguous.stderr)).toHaveLength(1);
    expect(ambiguous.stderr).toMatch(/^error: 10\.20\.0\.1 is held in 2 pools .*--pool/);
    const r = await runBin(["release", "--ip", "10.20.0.1", "--pool", "10.20.0.0/25", ...args]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/released\s+net-a\/10\.20\.0\.0\/25\s+10\.20\.0\.1\s+ctr-x\/net1/);
    expect((await store.readPool({ network: NET, cidr: WIDE.cidr.text }))?.pool.exactly(key("ctr-a"))).toBeDefined();
  });

  it("errors: one line, exit 2 — typo, unknown command, missing store, bad config", async () => {
    const cases: [string[], RegExp][] = [
      [["pool", ...args], /^error: unknown command 'pool' \(did you mean pools\?\)$/],
      [["pools", "--data-dri", dir], /^error: unknown option '--data-dri' \(did you mean --data-dir\?\)$/],
      [["pools"], /^error: no store given/],
      [["pools", "--data-dir", join(dir, "nope")], /^error: no file store at /],
      [["audit", ...args, "--grace", "soon"], /^error: --grace: "soon" is not a duration/],
      [["release", ...args, "--key", "no-slash"], /^error: --key: .*expected containerId\/ifName/],
      [["pools", "--config", join(dir, "missing.json")], /^error: cannot read --config /],
    ];
    for (const [argv, pattern] of cases) {
      const r = await runBin(argv);
      expect(r.code, argv.join(" ")).toBe(2);
      expect(lines(r.stderr), argv.join(" ")).toHaveLength(1);
      expect(r.stderr.trim()).toMatch(pattern);
    }
  });

  it("--help for each command", async () => {
    for (const command of ["pools", "show", "audit", "release"]) {
      const r = await runBin([command, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^Usage: ipamkit ${command} `));
      expect(r.stdout).toMatch(/--data-dir <dir>/);
    }
  });
});
