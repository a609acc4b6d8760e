import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { findWhereabouts } from "@ipamkit/kube-apiserver-launcher";
import type { Cluster, SimNode } from "./cluster.js";
import { PLUGIN } from "./cni.js";

/** Which IPAM the hollow nodes' runtimes call: ipamkit's binary (and its agents), or Whereabouts' own. */
export type IpamKind = "ipamkit" | "whereabouts";

/** One IPAM as the simulated runtimes call it: the binary, and the `ipam` keys of a node's network configuration. */
export interface SimIpam {
  readonly kind: IpamKind;
  /** How the result tables name it (`ipamkit`, `Whereabouts v0.9.2`). */
  readonly label: string;
  /** The CNI binary the runtimes run. */
  readonly plugin: string;
  /** The `ipam` keys for `node` besides the range and the network name. */
  keys(node: SimNode): Record<string, unknown>;
}

/** ipamkit: its built binary (dist/ipamkit), relaying to the node's agent, on the cluster's store. */
export function ipamkitIpam(cluster: Cluster): SimIpam {
  return { kind: "ipamkit", label: "ipamkit", plugin: PLUGIN, keys: (node) => ({ type: "ipamkit", ...cluster.ipam(node) }) };
}

/**
 * Whereabouts v0.9.2's own binary (test-infra/whereabouts builds it), on the cluster's real
 * kube-apiserver, in the pool namespace ipamkit uses (the kubeconfig's context namespace), through
 * the flat file its installer writes. Its defaults otherwise: overlapping-range reservations on,
 * one Lease for every call of the cluster. Throws, naming the command to build it, when it is not
 * built; only on the real kube-apiserver (Whereabouts needs Leases and the real API's semantics).
 */
export function whereaboutsIpam(cluster: Cluster): SimIpam {
  if (cluster.kind !== "kube-apiserver")
    throw new Error(`Whereabouts runs on the real kube-apiserver (--store kube-apiserver), not ${cluster.kind}`);
  const build = findWhereabouts();
  const dir = join(cluster.dir, "whereabouts.d");
  mkdirSync(dir, { recursive: true });
  const flatFile = join(dir, "whereabouts.conf");
  // the shape Whereabouts' installer writes (script/lib.sh generateWhereaboutsConf)
  writeFileSync(flatFile, JSON.stringify({ datastore: "kubernetes", kubernetes: { kubeconfig: cluster.kubeconfigPath } }, null, 2));
  return {
    kind: "whereabouts",
    label: `Whereabouts ${build.version}`,
    plugin: build.binary,
    keys: () => ({ type: "whereabouts", configuration_path: flatFile }),
  };
}

/** The IPAM of that kind on this cluster. */
export function simIpam(cluster: Cluster, kind: IpamKind): SimIpam {
  return kind === "ipamkit" ? ipamkitIpam(cluster) : whereaboutsIpam(cluster);
}
