import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api } from "@kubernetes/client-node";
import { findNodeBinaries } from "./binaries.js";
import { type ClusterBinaries, findClusterBinaries } from "./cluster-binaries.js";
import { type ChartValues, type ClusterIpam, installClusterIpam } from "./cluster-ipam.js";
import { type ClusterNode, startClusterNode } from "./cluster-node.js";
import { type ControlPlane, startControlPlane } from "./control-plane.js";
import { lockHost, noteHostRestore } from "./host-lock.js";
import { type HostState, restoreHost, snapshotHost } from "./host-state.js";
import type { IpamkitImage } from "./image.js";
import { createNad, installNadCrd } from "./multus.js";
import { nodeCondition } from "./node-daemons.js";
import { pauseImage } from "./pause.js";
import { must, until } from "./processes.js";

export interface ClusterOptions {
  /** how many real nodes (default 2) */
  readonly nodes?: number;
  /** whose IPAM serves the NADs' `"type": "whereabouts"`: ipamkit's chart (default) or Whereabouts' own */
  readonly ipam?: "ipamkit" | "whereabouts";
  /** ipamkit's image (the test run's); needed with ipamkit */
  readonly image?: IpamkitImage;
  /** extra chart values, merged into the launcher's, e.g. `{ cni: { extraFlatFileKeys: { sticky: true } } }` */
  readonly values?: ChartValues;
  /** the namespace of the NADs and the tests' pods (default `seed`) */
  readonly namespace?: string;
}

/** The secondary networks every test pod attaches, as NetworkAttachmentDefinitions users wrote for Whereabouts. */
export interface ClusterNetworks {
  /** NAD names, in the order of the pods' `k8s.v1.cni.cncf.io/networks` annotation (net1, net2) */
  readonly names: readonly string[];
  /** name → the CNI config in the NAD */
  readonly configs: Readonly<Record<string, object>>;
}

export interface Cluster {
  readonly apiserver: KubeApiserver;
  readonly core: CoreV1Api;
  readonly nodes: readonly ClusterNode[];
  readonly namespace: string;
  readonly networks: ClusterNetworks;
  readonly ipam: ClusterIpam;
  readonly binaries: ClusterBinaries;
  /** the host as it was before the cluster started (stop() puts it back) */
  readonly before: HostState;
  readonly links: readonly string[];
  node(name: string): ClusterNode;
  /** Resolves once every node is Ready. */
  ready(timeoutMs?: number): Promise<void>;
  logTail(): string;
  stop(): Promise<void>;
}

/**
 * The NADs, as a Whereabouts user writes them (README forms): a macvlan on a shared master with a
 * range and an exclude, and a bridge with range_start/range_end. Both nodes' pods share the master
 * and the bridge (one L2 segment, as two machines on one switch).
 */
export function clusterNetworks(links: { master: string; bridge: string }): ClusterNetworks {
  const configs = {
    "macvlan-net": {
      cniVersion: "0.3.1",
      name: "macvlan-net",
      type: "macvlan",
      master: links.master,
      mode: "bridge",
      ipam: { type: "whereabouts", range: "192.168.2.0/24", exclude: ["192.168.2.0/28"] },
    },
    "bridge-net": {
      cniVersion: "0.3.1",
      name: "bridge-net",
      type: "bridge",
      bridge: links.bridge,
      ipam: { type: "whereabouts", range: "10.30.0.0/24", range_start: "10.30.0.10", range_end: "10.30.0.250" },
    },
  };
  return { names: Object.keys(configs), configs };
}

/**
 * A real cluster on this host: the suite's kube-apiserver (ServiceAccount admission on), the
 * controllers of {@link startControlPlane}, kube-scheduler, and `nodes` real nodes (kubelet +
 * containerd each, in a mount namespace and cgroup root of its own) whose primary CNI is Multus.
 * The NAD CRD comes from Multus' own manifest; two NADs name `"type": "whereabouts"`, served by
 * ipamkit installed with `helm install` of its chart (the DaemonSet controller creates the agent
 * pods from the image), or by Whereabouts' own binary and `ip-control-loop`. Holds the host lock
 * and restores the host on stop().
 */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const binaries = findNodeBinaries();
  const cluster = findClusterBinaries();
  const pause = pauseImage();
  const count = options.nodes ?? 2;
  const namespace = options.namespace ?? "seed";
  const suffix = Math.random().toString(36).slice(2, 7);
  const podBridges = Array.from({ length: count }, (_, i) => `ipkc${i}${suffix}`);
  const net = { master: `ipkm${suffix}`, peer: `ipkp${suffix}`, bridge: `ipkb${suffix}` };
  const links = [...podBridges, net.master, net.peer, net.bridge];
  const unlock = await lockHost();
  const dir = mkdtempSync("/tmp/ipamkit-cluster-");
  const before = snapshotHost({ nodeDir: dir, links });
  noteHostRestore(before, { nodeDir: dir, links });
  const started: { apiserver?: KubeApiserver; control?: ControlPlane; nodes: ClusterNode[] } = { nodes: [] };
  const stop = async () => {
    for (const node of started.nodes) await node.stop().catch(() => undefined);
    await started.control?.stop();
    await started.apiserver?.stop();
    try {
      await restoreHost(before, { nodeDir: dir, links });
      rmSync(dir, { recursive: true, force: true });
    } finally {
      unlock();
    }
  };
  try {
    const apiserver = await startKubeApiserver({ serviceAccountAdmission: true, namespaces: [namespace] });
    started.apiserver = apiserver;
    const core = apiserver.kubeConfig.makeApiClient(CoreV1Api);
    const control = startControlPlane({ apiserver, binaries: cluster, dir });
    started.control = control;
    must("ip", ["link", "add", net.master, "type", "veth", "peer", "name", net.peer]);
    for (const l of [net.master, net.peer]) must("ip", ["link", "set", l, "up"]);
    await installNadCrd(apiserver, cluster.multusManifest);
    const ipam = await installClusterIpam({
      kind: options.ipam ?? "ipamkit",
      apiserver,
      dir,
      image: options.image,
      values: options.values,
    });
    const images = [pause.archive, ...ipam.images];
    for (let i = 0; i < count; i++) {
      const name = `node-${String.fromCharCode(97 + i)}`;
      const nodeDir = join(dir, name);
      mkdirSync(nodeDir);
      started.nodes.push(
        await startClusterNode(
          {
            apiserver,
            name,
            dir: nodeDir,
            binaries,
            cluster,
            images,
            pauseRef: pause.ref,
            podNetwork: { bridge: podBridges[i] ?? "", subnet: `10.244.${i + 1}.0/24` },
            cniFiles: ipam.cniFiles,
            cniBinaries: ipam.cniBinaries,
          },
          core,
        ),
      );
    }
    const networks = clusterNetworks(net);
    for (const name of networks.names) await createNad(apiserver, { name, namespace, config: networks.configs[name] as object });
    const nodes = started.nodes;
    const logTail = () => [control.logTail(), ...nodes.map((n) => n.logTail())].join("\n");
    const ready = async (timeoutMs = 120_000) => {
      try {
        await until(
          "every node Ready",
          timeoutMs,
          async () => (await Promise.all(nodes.map((n) => nodeCondition(core, n.name)))).every((c) => c === "True"),
          control.exited,
        );
        await ipam.ready(nodes.map((n) => n.name));
      } catch (error) {
        throw new Error(`${(error as Error).message}\n${logTail()}`);
      }
    };
    await ready();
    return {
      apiserver,
      core,
      nodes,
      namespace,
      networks,
      ipam,
      binaries: cluster,
      before,
      links,
      node(name) {
        const found = nodes.find((n) => n.name === name);
        if (found === undefined) throw new Error(`[node-launcher] no node ${name}`);
        return found;
      },
      ready,
      logTail,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
