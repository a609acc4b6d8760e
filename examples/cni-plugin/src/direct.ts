import { hostname } from "node:os";
import { type ConfigFs, dispatch } from "@ipamkit/cni";
import { openExclusive, openStore, readNodeSlice } from "./open-store.js";

// The entry of dist/ipamkit-direct.cjs: the whole plugin, run in this process. dist/ipamkit loads
// it only when the call is not forwarded to the node-local agent.
export function runDirect(readStdin: () => Promise<string>, fs: ConfigFs): Promise<number> {
  return dispatch({
    env: process.env,
    stdin: readStdin,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    fs,
    hostname,
    openStore,
    openExclusive: (config, identity, pool) => openExclusive(config, identity, undefined, pool),
    readNodeSlice,
  });
}
