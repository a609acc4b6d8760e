import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { cidrContains, parseCidr, parseIp } from "@ipamkit/core";
import { findWhereabouts, whereaboutsCrdFiles } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  attachment,
  type Binary,
  type CallResult,
  cni,
  describeCall,
  duplicateAddresses,
  failures,
  GROUP,
  type Interop,
  POOL_NAMESPACE,
  startInterop,
  VERSION,
} from "../test/whereabouts.js";

// ipamkit's plugin beside Whereabouts' own node-slice controller and CNI binary (v0.9.2,
// test-infra/whereabouts) on one sliced network, on a real kube-apiserver: the controller slices
// the range from the NAD and assigns the slices to the nodes; both binaries then allocate on each
// node in that node's slice, at once, in the same per-slice IPPools — no address twice, every DEL
// by the other binary leaves nothing behind.

const NAD_CRD = join(import.meta.dirname, "..", "..", "..", "packages", "cli", "test", "nad-crd.yaml");
const NETWORK = "slicectl";
const RANGE = "10.92.0.0/22";
const NODES = ["node-a", "node-b"] as const;

let interop: Interop;
let controller: ChildProcess | undefined;
let controllerLog = "";
let notReady: unknown;

beforeAll(async () => {
  try {
    const whereabouts = findWhereabouts();
    const binary = join(dirname(whereabouts.binary), "node-slice-controller");
    if (!existsSync(binary))
      throw new Error(`Whereabouts' node-slice controller is not built (${binary}): run test-infra/whereabouts/build.sh`);
    interop = await startInterop({ crds: [...whereaboutsCrdFiles(whereabouts), NAD_CRD] });
    controller = spawn(binary, ["-kubeconfig", interop.api.kubeconfigPath], {
      env: { PATH: process.env.PATH ?? "", WHEREABOUTS_NAMESPACE: POOL_NAMESPACE },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const keep = (d: Buffer) => {
      controllerLog = `${controllerLog}${d}`.slice(-20_000);
    };
    controller.stdout?.on("data", keep);
    controller.stderr?.on("data", keep);
  } catch (error) {
    notReady = error;
  }
}, 240_000);
beforeEach(() => {
  if (notReady !== undefined) throw notReady;
});
afterAll(async () => {
  controller?.kill("SIGTERM");
  await interop?.stop();
});

const conf = () => ({
  cniVersion: "1.0.0",
  name: NETWORK,
  type: "macvlan",
  ipam: { type: "whereabouts", range: RANGE, node_slice_size: "/24", configuration_path: interop.flatFile },
});

type Slices = Map<string, string>;

/** The NodeSlicePool's node → slice, once every node in `nodes` has one (the controller's work), polled. */
async function slicesFor(nodes: readonly string[]): Promise<Slices> {
  let last: unknown;
  for (let i = 0; i < 120; i++) {
    try {
      const pool = (await interop.custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: POOL_NAMESPACE,
        plural: "nodeslicepools",
        name: NETWORK,
      })) as { status?: { allocations?: { nodeName: string; sliceRange: string }[] } };
      last = pool;
      const slices = new Map((pool.status?.allocations ?? []).filter((a) => a.nodeName !== "").map((a) => [a.nodeName, a.sliceRange]));
      if (nodes.every((n) => slices.has(n))) return slices;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`no slice for every node of ${nodes.join(", ")}: ${JSON.stringify(last)}; controller: ${controllerLog.slice(-2000)}`);
}

const inSlice = (ip: string, slice: string) => cidrContains(parseCidr(slice), parseIp(ip));

/** Addresses outside their node's slice, as `ip (node, slice)`. */
function outsideSlices(results: readonly { node: string; r: CallResult }[], slices: Slices): string[] {
  return results
    .filter(({ node, r }) => r.ip !== undefined && !inSlice(r.ip, slices.get(node) ?? "0.0.0.0/32"))
    .map(({ node, r }) => `${r.ip} (${node}, ${slices.get(node)})`);
}

async function countOf(plural: "ippools" | "overlappingrangeipreservations"): Promise<{ objects: number; entries: number }> {
  const list = (await interop.custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: POOL_NAMESPACE, plural })) as {
    items: { spec?: { allocations?: Record<string, unknown> } }[];
  };
  return { objects: list.items.length, entries: list.items.reduce((n, p) => n + Object.keys(p.spec?.allocations ?? {}).length, 0) };
}

describe("node slices: Whereabouts' node-slice controller, its binary and ipamkit's on one sliced network", () => {
  it("both binaries allocate at once in each node's slice, as the controller assigned it: no duplicate, no failure; cross DELs leave nothing", async () => {
    const core = interop.api.kubeConfig.makeApiClient(CoreV1Api);
    for (const name of NODES) await core.createNode({ body: { metadata: { name } } });
    await interop.custom.createNamespacedCustomObject({
      group: "k8s.cni.cncf.io",
      version: "v1",
      namespace: "default",
      plural: "network-attachment-definitions",
      body: {
        apiVersion: "k8s.cni.cncf.io/v1",
        kind: "NetworkAttachmentDefinition",
        metadata: { name: NETWORK },
        // the controller reads the IPAM config as the plugin does, flat file included (configuration_path)
        spec: { config: JSON.stringify(conf()) },
      },
    });
    const slices = await slicesFor(NODES);
    expect(new Set(slices.values()).size).toBe(NODES.length);

    // one Whereabouts ADD first: its Lease is then there for ipamkit to see (default settings)
    const onNode = (node: string) => ({ NODENAME: node });
    const first = await cni(interop, "whereabouts", "ADD", attachment("first"), conf(), onNode("node-a"));
    expect(first.run.code, describeCall(first)).toBe(0);

    const calls: Promise<{ node: string; r: CallResult }>[] = [];
    for (const node of NODES)
      for (const binary of ["ipamkit", "whereabouts"] as Binary[])
        for (let i = 0; i < 4; i++) {
          const a = attachment(`${node}-${binary}-${i}`);
          calls.push(cni(interop, binary, "ADD", a, conf(), onNode(node)).then((r) => ({ node, r })));
        }
    const adds = [{ node: "node-a", r: first }, ...(await Promise.all(calls))];
    expect(failures(adds.map((x) => x.r))).toEqual([]);
    expect(duplicateAddresses(adds.map((x) => x.r))).toEqual([]);
    expect(outsideSlices(adds, slices)).toEqual([]);
    // every result carries the range's prefix
    for (const { r } of adds) expect((r.run.json?.ips as { address: string }[] | undefined)?.[0]?.address).toMatch(/\/22$/);
    expect(await countOf("ippools")).toEqual({ objects: NODES.length, entries: adds.length });
    expect((await countOf("overlappingrangeipreservations")).objects).toBe(adds.length);

    // each attachment released by the other binary, on its node
    const dels = await Promise.all(
      adds.map(({ node, r }) =>
        cni(interop, r.binary === "ipamkit" ? "whereabouts" : "ipamkit", "DEL", r.attachment, conf(), onNode(node)),
      ),
    );
    expect(failures(dels)).toEqual([]);
    expect(await countOf("ippools")).toEqual({ objects: NODES.length, entries: 0 });
    expect((await countOf("overlappingrangeipreservations")).objects).toBe(0);
  }, 240_000);

  it("a new node gets its slice from the controller, and ipamkit allocates there", async () => {
    const core = interop.api.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNode({ body: { metadata: { name: "node-c" } } });
    const slices = await slicesFor([...NODES, "node-c"]);
    const added = await cni(interop, "ipamkit", "ADD", attachment("c1"), conf(), { NODENAME: "node-c" });
    expect(added.run.code, describeCall(added)).toBe(0);
    expect(outsideSlices([{ node: "node-c", r: added }], slices)).toEqual([]);
    const whereabouts = await cni(interop, "whereabouts", "ADD", attachment("c2"), conf(), { NODENAME: "node-c" });
    expect(whereabouts.run.code, describeCall(whereabouts)).toBe(0);
    expect(duplicateAddresses([added, whereabouts])).toEqual([]);
    expect(outsideSlices([{ node: "node-c", r: whereabouts }], slices)).toEqual([]);
  }, 120_000);
});
