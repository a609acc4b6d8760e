import type { z } from "zod";
import { type RawFile, readRaw } from "./raw-set.js";
import {
  AddVsNode,
  BlockWalk,
  ClusterMove,
  Cni,
  Core,
  Etcd,
  Kubernetes,
  NodeChurn,
  PowerCycle,
  Reconcile,
  Sim,
  WhereaboutsInterop,
} from "./schemas.js";

/** Each raw file the figures come from: its name in bench/results/ and its shape. */
export const RAW_FILES = {
  interop: ["whereabouts-interop.json", WhereaboutsInterop],
  cni: ["cni.json", Cni],
  addVsNode: ["add-vs-node.json", AddVsNode],
  core: ["core.json", Core],
  etcd: ["etcd.json", Etcd],
  kubernetes: ["kubernetes.json", Kubernetes],
  blockWalk: ["block-walk-etcd.json", BlockWalk],
  reconcile: ["reconcile.json", Reconcile],
  powerCycle: ["reconcile-power-cycle.json", PowerCycle],
  /** `pnpm sim` at full size: 1000 pods × 10 networks on etcd, the stand-in and the real kube-apiserver. */
  sim: ["sim-10-networks.json", Sim],
  /** `pnpm sim --ipam ipamkit,whereabouts` on the real kube-apiserver. */
  simWhereabouts: ["sim-whereabouts.json", Sim],
  /** The lead's: a real node's pod churn, and pods moved on the real two-node cluster. */
  nodeChurn: ["node-churn.json", NodeChurn],
  clusterMove: ["cluster-move.json", ClusterMove],
} as const;

type Files = typeof RAW_FILES;
/** The raw files found in a results folder (a missing one is undefined: its rows are left out). */
export type Sources = { readonly [K in keyof Files]: RawFile<z.infer<Files[K][1]>> | undefined };

export function loadSources(dir: string): Sources {
  const out: Record<string, unknown> = {};
  for (const [key, [name, schema]] of Object.entries(RAW_FILES)) out[key] = readRaw(dir, name, schema);
  return out as Sources;
}
