import type { Cluster } from "./cluster.js";
import { limited, quantile, runCni } from "./cni.js";

export interface SweepPoint {
  concurrency: number;
  p50: number;
  p99: number;
}

/**
 * ADD latency against concurrency: `calls` ADDs (then their DELs) spread over the cluster's nodes,
 * with at most `c` CNI processes at once, for each c. Only the IPAM path (no pod objects).
 */
export async function sweep(cluster: Cluster, levels: number[], calls: number): Promise<SweepPoint[]> {
  const points: SweepPoint[] = [];
  for (const [round, c] of levels.entries()) {
    const conf = (i: number) => {
      const node = cluster.nodes[i % cluster.nodes.length];
      if (node === undefined) throw new Error("no nodes");
      return JSON.stringify({
        cniVersion: "1.1.0",
        name: "sweep",
        ipam: { type: "ipamkit", range: "10.250.0.0/20", network_name: "sweep", ...cluster.ipam(node) },
      });
    };
    const call = (command: "ADD" | "DEL", i: number) =>
      runCni(
        {
          command,
          containerId: `sweep-${round}-${i}`,
          ifName: "net1",
          pod: { namespace: "sweep", name: `p${i}`, uid: `u${i}` },
          conf: conf(i),
        },
        cluster.spawner,
      );
    const adds = await limited(
      c,
      Array.from({ length: calls }, (_, i) => () => call("ADD", i)),
    );
    const failed = adds.filter((a) => a.code !== 0);
    if (failed.length > 0) throw new Error(`sweep ADD failed: ${failed[0]?.error}`);
    await limited(
      c,
      Array.from({ length: calls }, (_, i) => () => call("DEL", i)),
    );
    const ms = adds.map((a) => a.ms);
    points.push({ concurrency: c, p50: quantile(ms, 0.5), p99: quantile(ms, 0.99) });
  }
  return points;
}
