import { chmodSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { NODE_CONFIGURATION_PATH_ENV, NODE_KEYS } from "@ipamkit/cni";

/**
 * Writes the node's flat file `<dir>/whereabouts.conf` (this user's, mode 0644: what the installer
 * writes) and returns the environment that names it, as a node's runtime and agent would have it.
 * Node-level keys (agent_socket, agent_required, agent_uid, store credentials) go here, never into
 * a test's network config: the binary and the loader read them only from this file.
 */
export function nodeFlatFile(dir: string, keys: Record<string, unknown>): Record<string, string> {
  const path = join(dir, "whereabouts.conf");
  const text = JSON.stringify(keys);
  let current: string | undefined;
  try {
    current = readFileSync(path, "utf8");
  } catch {
    current = undefined;
  }
  // replaced whole (calls running meanwhile read the old file or the new one, never half of one)
  if (current !== text) {
    writeFileSync(`${path}.${process.pid}`, text);
    chmodSync(`${path}.${process.pid}`, 0o644);
    renameSync(`${path}.${process.pid}`, path);
  }
  return { [NODE_CONFIGURATION_PATH_ENV]: dir };
}

let node: string | undefined;

/**
 * The node of this test file's calls: runPlugin() and startAgentProcess() give every process
 * IPAMKIT_CONFIGURATION_PATH=<dir> unless the call's own environment says otherwise, and
 * onNode() writes that directory's flat file. undefined: no node (the defaults, as on a bare host).
 */
export function useNode(dir: string | undefined): void {
  node = dir;
}

/** The environment naming the current node's flat file ({} without a node). */
export function nodeEnv(): Record<string, string> {
  return node === undefined ? {} : { [NODE_CONFIGURATION_PATH_ENV]: node };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * An `ipam` block as a node is set up: its node-level keys (NODE_KEYS: the agent's, the store
 * credentials, and `etcd_host` with etcd credentials) are written to the current node's flat file
 * now, replacing it; the rest is the network config's `ipam`, returned. `configuration_path` is
 * dropped (the node names its file).
 */
export function onNode(ipam: Record<string, unknown>): Record<string, unknown> {
  if (node === undefined) throw new Error("onNode: call useNode(dir) first");
  const own: Record<string, unknown> = {};
  const flat: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(ipam)) {
    if (value === undefined) continue;
    if (key === "kubernetes" && isObject(value)) {
      const { kubeconfig, ...rest } = value;
      if (kubeconfig !== undefined) flat.kubernetes = { kubeconfig };
      if (Object.keys(rest).length > 0) own.kubernetes = rest;
    } else if (NODE_KEYS.includes(key)) {
      if (key !== "configuration_path") flat[key] = value;
    } else own[key] = value;
  }
  // with the node's etcd credentials, the host they are presented to is the node's too
  if (Object.keys(flat).some((key) => key.startsWith("etcd_")) && own.etcd_host !== undefined) {
    flat.etcd_host = own.etcd_host;
    delete own.etcd_host;
  }
  nodeFlatFile(node, flat);
  return own;
}
