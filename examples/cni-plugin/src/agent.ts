import { parseArgs } from "node:util";
import { startAgent } from "@ipamkit/agent";
import { NODE_NAME } from "@ipamkit/cni";
import pino from "pino";
import { DATASTORES, type Datastore, loadStoreCode, openStore } from "./open-store.js";

// dist/ipamkit-agent: the node-local agent. It answers the CNI calls that `ipamkit` forwards over
// a Unix socket, with the same code and the same store loading as the binary (open-store.ts), but
// keeps each store's client open between calls.
const USAGE = "usage: ipamkit-agent --socket PATH [--node-name NAME] [--log-level info] [--warm etcd,kubernetes,file]";

async function main(): Promise<number> {
  let values: { socket?: string; "node-name"?: string; "log-level"?: string; warm?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      options: {
        socket: { type: "string" },
        "node-name": { type: "string" },
        "log-level": { type: "string" },
        warm: { type: "string" },
        help: { type: "boolean" },
      },
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.socket === undefined || !values.socket.startsWith("/")) {
    process.stderr.write(`error: --socket must be an absolute path\n${USAGE}\n`);
    return 2;
  }
  const nodeName = values["node-name"];
  if (nodeName !== undefined && !NODE_NAME.test(nodeName)) {
    process.stderr.write(`error: --node-name: not a node name: ${JSON.stringify(nodeName)}\n${USAGE}\n`);
    return 2;
  }
  const warm = (values.warm ?? "").split(",").filter((name) => name !== "");
  const unknown = warm.find((name) => !(DATASTORES as readonly string[]).includes(name));
  if (unknown !== undefined) {
    process.stderr.write(`error: --warm: not a datastore: ${JSON.stringify(unknown)} (one of ${DATASTORES.join(", ")})\n${USAGE}\n`);
    return 2;
  }
  let logger: pino.Logger;
  try {
    logger = pino({ level: values["log-level"] ?? "info" });
  } catch {
    process.stderr.write(`error: --log-level: unknown level ${JSON.stringify(values["log-level"])}\n${USAGE}\n`);
    return 2;
  }
  let agent: Awaited<ReturnType<typeof startAgent>>;
  try {
    agent = await startAgent({ socketPath: values.socket, openStore, logger, ...(nodeName === undefined ? {} : { nodeName }) });
  } catch (error) {
    logger.fatal(`cannot start: ${(error as Error).message}`);
    return 1;
  }
  // after listening: a call that arrives meanwhile is answered (it waits for the same code at most)
  void warmStores(warm as Datastore[], logger);
  await new Promise<void>((resolve) => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      process.once(signal, () => {
        logger.info({ signal }, "stopping");
        resolve();
      });
    }
  });
  await agent.close();
  return 0;
}

/** Loads the named stores' code now rather than on the node's first call; a failure is only logged (a call reports it). */
async function warmStores(datastores: Datastore[], logger: pino.Logger): Promise<void> {
  for (const datastore of datastores) {
    const started = performance.now();
    try {
      await loadStoreCode(datastore);
      logger.info({ datastore, ms: Math.round(performance.now() - started) }, "store code loaded");
    } catch (error) {
      logger.warn({ datastore }, `--warm: cannot load the store code: ${(error as Error).message}`);
    }
  }
}

void main().then((code) => {
  process.exitCode = code;
});
