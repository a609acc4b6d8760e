import { parseArgs } from "node:util";
import { positiveInteger } from "./cli.js";
import { DEFAULT_AGENTS_PER_PROCESS, nodesLabel, type SimNode, type StoreKind, startCluster } from "./cluster.js";
import { limited, runCni } from "./cni.js";
import { cpuSince } from "./cpu.js";
import { perCallText, requestsSince, totalOf } from "./requests.js";
import { networkConf } from "./scenario.js";
import { startSpawner } from "./spawner.js";

/**
 * pnpm agent-cost — what the node-local agents spend per call: N nodes (one real agent each), P
 * pods × K networks, ADD all / DEL all, twice; the agents' CPU (from /proc) and the CNI processes'
 * own CPU per call, the wall time per phase, and on Kubernetes the requests (and pool GETs) per
 * call (--restart-agents: fresh agent processes for each round after the first, as after a
 * power-cycle). No pod objects, no reconciler, no audit: `pnpm sim`
 * is the scenario; this is the quick way to compare two builds of the agent (build, run, build the
 * other, run, alternate).
 */
const { values } = parseArgs({
  options: {
    store: { type: "string", default: "kubernetes" },
    nodes: { type: "string", default: "20" },
    pods: { type: "string", default: "200" },
    networks: { type: "string", default: "10" },
    rounds: { type: "string", default: "2" },
    "node-block-size": { type: "string", default: "16" },
    "agents-per-process": { type: "string", default: String(DEFAULT_AGENTS_PER_PROCESS) },
    "restart-agents": { type: "boolean", default: false },
  },
});
const kind = values.store as StoreKind;
if (kind !== "etcd" && kind !== "kubernetes" && kind !== "kube-apiserver") {
  process.stderr.write(`agent-cost: --store is etcd, kubernetes or kube-apiserver, not ${values.store}\n`);
  process.exit(2);
}
const count = (name: "nodes" | "pods" | "networks" | "rounds" | "node-block-size" | "agents-per-process"): number =>
  positiveInteger("agent-cost", name, values[name]);
const [nodeCount, pods, networks, rounds, blockSize, agentsPerProcess] = [
  count("nodes"),
  count("pods"),
  count("networks"),
  count("rounds"),
  count("node-block-size"),
  count("agents-per-process"),
];
const spawner = startSpawner("native");
const cluster = await startCluster(kind, nodeCount, { nodeBlockSize: blockSize, spawner, agentsPerProcess });
try {
  await cluster.startAgents(8);
  const conf = (pod: number, k: number) => networkConf(cluster, cluster.nodes[pod % cluster.nodes.length] as SimNode, k);
  console.log(
    `| store | nodes | pods × networks | phase | s | agents' CPU ms per call | CNI processes' CPU ms per call | requests per call | pool GETs (etcd: Ranges) per call |\n|---|---:|---|---|---:|---:|---:|---:|---:|`,
  );
  /** Each round's requests per call by verb and kind (on etcd, by RPC), printed after the table. */
  const details: string[] = [];
  for (let round = 0; round < rounds; round++) {
    if (round > 0 && values["restart-agents"]) {
      for (const node of cluster.nodes) cluster.killAgent(node);
      await cluster.startAgents(8);
    }
    for (const command of ["ADD", "DEL"] as const) {
      const cpu = cpuSince(cluster);
      const requestsMade = await requestsSince(cluster);
      const started = performance.now();
      await limited(
        32,
        Array.from({ length: pods }, (_, pod) => async () => {
          for (let k = 0; k < networks; k++) {
            const call = { command, containerId: `sandbox-${round}-${pod}`, ifName: `net${k + 1}` };
            const owner = { namespace: "sim", name: `sts-${pod}`, uid: `uid-${round}-${pod}` };
            const outcome = await runCni({ ...call, pod: owner, conf: conf(pod, k) }, spawner);
            if (outcome.code !== 0) throw new Error(`${command} ${call.containerId}: ${outcome.error}`);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const spent = cpu();
      const perCall = (part: number) => ((part * 1000) / (pods * networks)).toFixed(1);
      const requests = await requestsMade();
      /** Per call: every request (no key), or those of one verb and resource (on etcd, one RPC). */
      const per = (key?: string) => {
        if (requests === undefined) return "-";
        const n = key === undefined ? totalOf(requests) : (requests[key] ?? 0);
        return (n / (pods * networks)).toFixed(2);
      };
      console.log(
        `| ${kind} | ${nodesLabel(nodeCount, agentsPerProcess)} | ${pods} × ${networks} | ${command} all (round ${round + 1}) | ${seconds.toFixed(1)} | ${perCall(spent.agents)} | ${perCall(spent.cni)} | ${per()} | ${per(kind === "etcd" ? "Range" : "get ippools")} |`,
      );
      if (requests !== undefined) details.push(`- round ${round + 1}: ${perCallText(requests, pods * networks, command)}`);
    }
  }
  if (details.length > 0) console.log(`\nRequests per call, by verb and object kind (etcd: by RPC):\n\n${details.join("\n")}`);
} finally {
  await cluster.close();
  await spawner.close();
}
