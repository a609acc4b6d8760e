import { agentStats } from "@ipamkit/agent";
import { describe, expect, it } from "vitest";
import { startCluster } from "./cluster.js";
import { runCni } from "./cni.js";
import { hollowNodes } from "./hollow-nodes.js";
import { networkConf } from "./scenario.js";

// The simulation's hollow nodes (src/hollow-nodes.ts): one process hosting several simulated
// nodes' agents, each answering on its own socket as its own node. The product agent serves one.
describe("hollow nodes", () => {
  it("one process, two nodes: each socket answers as its own node, per-node blocks claimed by each", async () => {
    const cluster = await startCluster("file", 2, { agentsPerProcess: 2, nodeBlockSize: 16 });
    try {
      await cluster.startAgents(1);
      expect(cluster.agentPids()).toHaveLength(1);
      const add = (i: number) => {
        const node = cluster.nodes[i];
        if (node === undefined) throw new Error(`no node ${i}`);
        return runCni({
          command: "ADD",
          containerId: `c${i}`,
          ifName: "net1",
          pod: { namespace: "ns", name: `p${i}`, uid: `u${i}` },
          conf: networkConf(cluster, node, 0),
        });
      };
      const [a, b] = [await add(0), await add(1)];
      expect([a.code, b.code, a.error, b.error]).toEqual([0, 0, undefined, undefined]);
      const stats = await Promise.all(cluster.nodes.map((node) => agentStats(node.socket)));
      expect(stats.map((s) => s.requests)).toEqual([1, 1]);
      // blocks of 16: the two nodes' addresses are in different blocks, each node's own
      const blockOf = (ip: string | undefined) => Number(ip?.split(".")[3]) >> 4;
      expect(blockOf(a.ip)).not.toBe(blockOf(b.ip));
    } finally {
      await cluster.close();
    }
  });

  it("refuses nodes that cannot be hosted together", () => {
    expect(hollowNodes(["n1=/run/a.sock", "n2=/run/b.sock"])).toEqual([
      { name: "n1", socket: "/run/a.sock" },
      { name: "n2", socket: "/run/b.sock" },
    ]);
    expect(hollowNodes([])).toBe("--node NAME=SOCKET is required");
    expect(hollowNodes(["n1=/run/a.sock", "n1=/run/b.sock"])).toMatch(/a node name is given twice/);
    expect(hollowNodes(["n1=/run/a.sock", "n2=/run/a.sock"])).toBe("a socket is given twice");
    expect(hollowNodes(["n1=rel.sock"])).toMatch(/--node: NAME=\/absolute\/socket\/path/);
    expect(hollowNodes(["/run/a.sock"])).toMatch(/--node: NAME=\/absolute\/socket\/path/);
  });
});
