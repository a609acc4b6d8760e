import { execFileSync } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { attachmentKey, type IpamStore, Pool, parseCidr, StoreConflictError } from "@ipamkit/core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { makeTempDir } from "./fixtures/temp-dir.js";
import { bundleWorker } from "./fixtures/workers.js";
import { createFileStore } from "./index.js";

/**
 * Deterministic interleavings of the commit protocol: another writer (a real child process, run
 * synchronously from inside the mocked call) commits exactly between a writer's check and its
 * link, or between its link and its settle check, or between a reader's readdir and its open.
 * Each hook fires once (it is cleared before it runs).
 */
const hooks = vi.hoisted(() => ({
  beforeLink: undefined as undefined | (() => void),
  afterLink: undefined as undefined | (() => void),
  afterReaddir: undefined as undefined | (() => void),
}));

vi.mock("node:fs", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs")>();
  const take = (name: keyof typeof hooks) => {
    const hook = hooks[name];
    hooks[name] = undefined;
    return hook;
  };
  return {
    ...actual,
    linkSync: (from: string, to: string) => {
      take("beforeLink")?.();
      actual.linkSync(from, to);
      take("afterLink")?.();
    },
    readdirSync: (path: string) => {
      const names = actual.readdirSync(path);
      take("afterReaddir")?.();
      return names;
    },
  };
});

const cidr = parseCidr("10.0.0.0/24");
const ref = { network: "", cidr: cidr.text };
const key = (containerId: string) => attachmentKey({ containerId, ifName: "eth0" });
const pool = (...ids: string[]) =>
  Pool.fromReservations(
    cidr,
    ids.map((id, i) => ({ offset: BigInt(i + 1), key: key(id) })),
  );
const ids = (p: Pool | undefined) => p?.reservations().map((r) => r.key.containerId);

let bundleDir: Awaited<ReturnType<typeof makeTempDir>>;
let writer: string;
let tmp: Awaited<ReturnType<typeof makeTempDir>>;
let mine: IpamStore;
let dir: string;

/** `n` commits by another process, each on top of what it reads; returns what each read saw. */
function otherCommits(n: number, prefix: string): (string[] | undefined)[] {
  const out = execFileSync(process.execPath, [writer, tmp.store, String(n), prefix], { encoding: "utf8" });
  return JSON.parse(out) as (string[] | undefined)[];
}

beforeAll(async () => {
  bundleDir = await makeTempDir("ipamkit-races-");
  writer = await bundleWorker(bundleDir.dir, "commit-worker");
});

afterAll(async () => {
  await bundleDir.remove();
});

beforeEach(async () => {
  tmp = await makeTempDir();
  mine = createFileStore({ dir: tmp.store });
  dir = join(tmp.store, "pools", "_", "10.0.0.0_2F24");
});

afterEach(async () => {
  hooks.beforeLink = hooks.afterLink = hooks.afterReaddir = undefined;
  await tmp.remove();
});

describe("commit races", () => {
  it("a writer overtaken between its check and its link conflicts (EEXIST)", async () => {
    const v1 = await mine.writePool(ref, pool("a"), undefined);
    hooks.beforeLink = () => otherCommits(1, "o");
    await expect(mine.writePool(ref, pool("a", "mine"), v1)).rejects.toBeInstanceOf(StoreConflictError);
    expect(ids((await mine.readPool(ref))?.pool)).toEqual(["a", "o0"]);
  });

  it("a writer whose target slot was already garbage-collected still conflicts, and removes its link", async () => {
    const v1 = await mine.writePool(ref, pool("a"), undefined);
    // While we wait to link generation 2, three commits land and GC removes generations 1 and 2.
    let during: string[] = [];
    hooks.beforeLink = () => {
      otherCommits(3, "o");
      during = readdirSync(dir).filter((n) => n.endsWith(".json"));
    };
    await expect(mine.writePool(ref, pool("a", "mine"), v1)).rejects.toBeInstanceOf(StoreConflictError);
    // Generation 2 was free again when we linked it: our link succeeded, was found stale, and was removed.
    expect(during.sort()).toEqual(["000000000003.json", "000000000004.json"]);
    expect((await readdir(dir)).sort()).toEqual(["000000000003.json", "000000000004.json"]);
    const read = await mine.readPool(ref);
    expect(read?.version).toBe("4");
    expect(ids(read?.pool)).toEqual(["a", "o0", "o1", "o2"]);
  });

  it("the same for a create-if-absent whose generation 1 was created and collected meanwhile", async () => {
    hooks.beforeLink = () => otherCommits(3, "o");
    await expect(mine.writePool(ref, pool("mine"), undefined)).rejects.toBeInstanceOf(StoreConflictError);
    expect((await readdir(dir)).sort()).toEqual(["000000000002.json", "000000000003.json"]);
    expect(ids((await mine.readPool(ref))?.pool)).toEqual(["o0", "o1", "o2"]);
  });

  it("a writer whose commit was built upon before it checked succeeds (no false conflict)", async () => {
    const v1 = await mine.writePool(ref, pool("a"), undefined);
    let seen: (string[] | undefined)[] = [];
    hooks.afterLink = () => {
      seen = otherCommits(5, "o");
    };
    expect(await mine.writePool(ref, pool("a", "mine"), v1)).toBe("2");
    expect(seen[0]).toEqual(["a", "mine"]);
    const read = await mine.readPool(ref);
    expect(read?.version).toBe("7");
    expect(ids(read?.pool)).toEqual(["a", "mine", "o0", "o1", "o2", "o3", "o4"]);
  });

  it("built upon by more commits than the recorded ancestry: the successor's ack decides, committed", async () => {
    const v1 = await mine.writePool(ref, pool("a"), undefined);
    let seen: (string[] | undefined)[] = [];
    hooks.afterLink = () => {
      seen = otherCommits(20, "o");
      // The successor found our temp link (we had not settled) and left an ack for our commit.
      expect(readdirSync(dir).filter((n) => n.startsWith(".ack-"))).toHaveLength(1);
    };
    expect(await mine.writePool(ref, pool("a", "mine"), v1)).toBe("2");
    expect(seen[0]).toEqual(["a", "mine"]);
    expect((await mine.readPool(ref))?.version).toBe("22");
    // We removed the ack and our temp link once settled.
    expect((await readdir(dir)).sort()).toEqual(["000000000021.json", "000000000022.json"]);
  });

  it("a stale link behind more commits than the recorded ancestry still conflicts (no ack names it)", async () => {
    const v1 = await mine.writePool(ref, pool("a"), undefined);
    hooks.beforeLink = () => otherCommits(20, "o");
    await expect(mine.writePool(ref, pool("a", "mine"), v1)).rejects.toBeInstanceOf(StoreConflictError);
    expect((await readdir(dir)).sort()).toEqual(["000000000020.json", "000000000021.json"]);
    expect(ids((await mine.readPool(ref))?.pool)).not.toContain("mine");
  });

  it("a reader never returns a stale writer's leftover found under a re-used generation number", async () => {
    await mine.writePool(ref, pool("a"), undefined);
    hooks.afterReaddir = () => {
      otherCommits(3, "o"); // generations 2..4; 1 and 2 are collected
      // What a stale writer (based on nothing, create-if-absent) leaves for a moment at slot 1:
      const phantom = `{"commit":"0123456789abcdef","ancestry":[],"cidr":"10.0.0.0/24","network":"","lastOffset":null,"reservations":[{"offset":"9","containerId":"phantom","ifName":"eth0"}]}\n`;
      writeFileSync(join(dir, "000000000001.json"), phantom);
    };
    const read = await mine.readPool(ref);
    expect(read?.version).toBe("4");
    expect(ids(read?.pool)).toEqual(["a", "o0", "o1", "o2"]);
  });

  it("a reader whose generation is collected between readdir and open reads again", async () => {
    await mine.writePool(ref, pool("a"), undefined);
    hooks.afterReaddir = () => otherCommits(3, "o");
    const read = await mine.readPool(ref);
    expect(read?.version).toBe("4");
    expect(ids(read?.pool)).toEqual(["a", "o0", "o1", "o2"]);
  });
});
