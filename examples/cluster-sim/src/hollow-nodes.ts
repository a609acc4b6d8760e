import { parseArgs } from "node:util";
import { type Agent, startAgent } from "@ipamkit/agent";
import { createStoreOpener, DATASTORES, type Datastore, storeSpecOfConfig } from "@ipamkit/open-store";
import { defaultStoreModules } from "@ipamkit/open-store/modules";
import pino from "pino";

// Hollow nodes, as kubemark has them: one process of the simulation hosts the node-local agents of
// several simulated nodes, each its own agent (socket, node name, store clients, queues), so that
// 100 nodes do not need 100 Node processes contending for two cores. The product agent
// (dist/ipamkit-agent) runs one node; this program is the simulation's, started by cluster.ts.
export const USAGE = "usage: hollow-nodes --node NAME=SOCKET [--node NAME=SOCKET ...] [--log-level warn] [--warm etcd|kubernetes|file]";

export interface HollowNode {
  name: string;
  socket: string;
}

/** The nodes to host, from `--node NAME=SOCKET` each; a message when they cannot be hosted together. */
export function hollowNodes(specs: readonly string[]): HollowNode[] | string {
  if (specs.length === 0) return "--node NAME=SOCKET is required";
  const nodes: HollowNode[] = [];
  for (const spec of specs) {
    const eq = spec.indexOf("=");
    const name = spec.slice(0, eq);
    const socket = spec.slice(eq + 1);
    if (eq < 1 || !socket.startsWith("/")) return `--node: NAME=/absolute/socket/path, not ${JSON.stringify(spec)}`;
    nodes.push({ name, socket });
  }
  // every agent is its node's only writer: two agents under one name would each act for the same node
  if (new Set(nodes.map((n) => n.name)).size !== nodes.length) return "a node name is given twice: each hosted node is its own node";
  if (new Set(nodes.map((n) => n.socket)).size !== nodes.length) return "a socket is given twice";
  return nodes;
}

const opener = createStoreOpener(defaultStoreModules);
const openStore = (config: Parameters<typeof storeSpecOfConfig>[0]) => opener.open(storeSpecOfConfig(config));

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      node: { type: "string", multiple: true },
      "log-level": { type: "string", default: "warn" },
      warm: { type: "string" },
    },
    strict: true,
  });
  const nodes = hollowNodes(values.node ?? []);
  const warm = values.warm;
  if (typeof nodes === "string" || (warm !== undefined && !(DATASTORES as readonly string[]).includes(warm))) {
    process.stderr.write(`error: ${typeof nodes === "string" ? nodes : `--warm: not a datastore: ${warm}`}\n${USAGE}\n`);
    return 2;
  }
  const logger = pino({ level: values["log-level"] });
  const agents: Agent[] = [];
  for (const node of nodes) {
    try {
      agents.push(
        await startAgent({
          socketPath: node.socket,
          nodeName: node.name,
          openStore,
          openExclusive: (config, identity, deadline) =>
            opener.whereaboutsLease({
              ...(config.kubernetes.kubeconfig === undefined ? {} : { kubeconfig: config.kubernetes.kubeconfig }),
              identity,
              ...(deadline === undefined ? {} : { deadline }),
            }),
          logger: logger.child({ node: node.name }),
        }),
      );
    } catch (error) {
      process.stderr.write(`hollow-nodes: ${node.name} cannot start: ${(error as Error).message}\n`);
      await Promise.all(agents.map((agent) => agent.close()));
      return 1;
    }
  }
  if (warm !== undefined) await opener.load(warm as Datastore);
  await new Promise<void>((resolve) => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => resolve());
  });
  await Promise.all(agents.map((agent) => agent.close()));
  return 0;
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) void main().then((code) => process.exit(code));
