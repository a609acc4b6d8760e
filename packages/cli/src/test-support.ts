import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  attachmentKey,
  createIpam,
  createNodeBlockIpam,
  type IpamStore,
  Pool,
  type PoolRef,
  parseCidr,
  parseRange,
  type Range,
  type Reservation,
} from "@ipamkit/core";

/** The built `ipamkit` bin: tests run it as a process, as an operator does. */
export const BIN = fileURLToPath(new URL("../dist/bin/ipamkit.js", import.meta.url));

export interface BinResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built binary; fails with the command to run when it is not built. */
export function runBin(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<BinResult> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is not built: run \`pnpm turbo run build --filter=@ipamkit/cli...\``);
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Asserts nothing: the stderr lines (a clean one-line error has exactly one, and no stack frame). */
export const lines = (text: string) => text.split("\n").filter((l) => l.trim() !== "");

export const NET = "net-a";
export const WIDE = parseRange({ range: "10.20.0.0/24" });
export const NARROW = parseRange({ range: "10.20.0.0/25" });
export const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });

/**
 * A consistent store: three attachments made by core (so with their overlapping-range claims),
 * two in the /24 and one in the overlapping /25 of network net-a.
 */
export async function seedClean(store: IpamStore, pods: { a?: string; uid?: string } = {}): Promise<void> {
  const ipam = createIpam({ store });
  const podA = pods.a ?? "default/pod-a";
  await ipam.allocate({
    network: NET,
    ranges: [WIDE],
    key: key("ctr-a"),
    podRef: podA,
    ...(pods.uid === undefined ? {} : { podUid: pods.uid }),
  });
  await ipam.allocate({
    network: NET,
    ranges: [WIDE],
    key: key("ctr-b"),
    podRef: podA,
    ...(pods.uid === undefined ? {} : { podUid: pods.uid }),
  });
  await ipam.allocate({
    network: NET,
    ranges: [NARROW],
    key: key("ctr-c"),
    podRef: podA,
    ...(pods.uid === undefined ? {} : { podUid: pods.uid }),
  });
}

/**
 * Plants a double hold as a store without claims would leave it (Whereabouts with overlapping
 * ranges off, a crashed writer): the address the /24 gave ctr-a, written into the /25 for ctr-x.
 */
export async function plantDuplicate(store: IpamStore, address = "10.20.0.1"): Promise<void> {
  const ref: PoolRef = { network: NET, cidr: NARROW.cidr.text };
  const stored = await store.readPool(ref);
  const cidr = parseCidr(ref.cidr);
  const offset = BigInt(address.split(".").at(-1) ?? "0");
  const planted: Reservation = {
    offset,
    key: key("ctr-x"),
    podRef: "default/pod-x",
    createdAt: new Date(Date.now() - 3_600_000).toISOString(),
  };
  const pool = Pool.fromReservations(cidr, [...(stored?.pool.reservations() ?? []), planted]);
  await store.writePool(ref, pool, stored?.version);
}

/** Per-node blocks: two nodes allocate in 10.30.0.0/24 in blocks of 16. */
export async function seedBlocks(store: IpamStore): Promise<Range> {
  const range = parseRange({ range: "10.30.0.0/24" });
  for (const node of ["node-1", "node-2"]) {
    const ipam = createNodeBlockIpam({ store, node, blockSize: 16 });
    for (let i = 0; i < 3; i++)
      await ipam.allocate({ network: "blocks", ranges: [range], key: key(`${node}-c${i}`), podRef: "default/pod-a" });
  }
  return range;
}
