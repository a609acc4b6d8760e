#!/usr/bin/env node
import { parseArgs } from "node:util";
import { startKubeTestServer } from "./server.js";

const USAGE = `usage: kube-test-server [--port <n>] [--kubeconfig <file>] [--namespace <ns>] [--token <t>] [--max-object-bytes <n>]

Serves a strict in-process stand-in for the Kubernetes API (Whereabouts CRs, pods, leases) on
127.0.0.1 until SIGINT/SIGTERM. Test infrastructure, not a Kubernetes.`;

function fail(message: string): never {
  process.stderr.write(`kube-test-server: ${message}\n`);
  process.exit(2);
}

function integer(name: string, text: string | undefined, max: number): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) > max) fail(`--${name} must be an integer from 0 to ${max}, got ${JSON.stringify(text)}`);
  return Number(text);
}

async function main(): Promise<void> {
  let values: ReturnType<typeof parse>["values"];
  try {
    values = parse().values;
  } catch (error) {
    fail((error as Error).message.split("\n")[0] ?? "bad arguments");
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const port = integer("port", values.port, 65_535) ?? 0;
  const maxObjectBytes = integer("max-object-bytes", values["max-object-bytes"], Number.MAX_SAFE_INTEGER);
  if (values.token === "") fail("--token must not be empty");
  const server = await startKubeTestServer({
    port,
    ...(values.token === undefined ? {} : { token: values.token }),
    ...(maxObjectBytes === undefined ? {} : { maxObjectBytes }),
  });
  if (values.kubeconfig !== undefined)
    await server.writeKubeconfig(values.kubeconfig, values.namespace === undefined ? {} : { namespace: values.namespace });
  const stop = () => {
    void server.close().then(() => process.exit(0));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  process.stdout.write(`kube-test-server listening on ${server.url}\n`);
}

function parse() {
  return parseArgs({
    options: {
      port: { type: "string" },
      kubeconfig: { type: "string" },
      namespace: { type: "string" },
      token: { type: "string" },
      "max-object-bytes": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
    allowPositionals: false,
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`kube-test-server: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
