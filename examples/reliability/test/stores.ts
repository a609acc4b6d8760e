import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type IpamConfig, whereaboutsEtcdKeys } from "@ipamkit/cni";
import type { IpamStore, PoolRef } from "@ipamkit/core";
import { type EtcdInstance, startEtcd } from "@ipamkit/etcd-launcher";
import { type KubeTestServer, startKubeTestServer } from "@ipamkit/kube-test-server";
import { createEtcdStore, etcdOptionsFromWhereabouts, layout } from "@ipamkit/storage-etcd";
import { createFileStore } from "@ipamkit/storage-file";
import { createKubernetesStore, GROUP, IPPOOL, ipPoolName, RESERVATION, VERSION } from "@ipamkit/storage-kubernetes";
import { Etcd3 } from "etcd3";
import { scratchDir } from "./campaign.js";

/** Opens what a CNI config selects, as the binary's open-store.ts does (the Kubernetes bundle aside). */
export async function openConfigured(config: IpamConfig): Promise<IpamStore> {
  switch (config.datastore) {
    case "file":
      return createFileStore({ dir: config.dataDir });
    case "etcd": {
      return createEtcdStore(etcdOptionsFromWhereabouts(whereaboutsEtcdKeys(config.etcd)));
    }
    case "kubernetes":
      return createKubernetesStore({ ...(config.kubernetes.kubeconfig === undefined ? {} : { kubeconfig: config.kubernetes.kubeconfig }) });
  }
}

/** One store as the campaigns see it: its IPAM config keys, a library client, and its raw representation. */
export interface RawStore {
  readonly name: "file" | "etcd" | "kubernetes";
  /** IPAM config keys that select this store. */
  readonly ipam: Record<string, unknown>;
  open(): IpamStore;
  /** Everything the store holds, byte for byte with versions (file contents; etcd keys, values, mod revisions; objects with resourceVersions). */
  snapshot(): Promise<string>;
  close(): Promise<void>;
}

export interface FileRaw extends RawStore {
  /** The newest generation file of a pool. */
  poolFile(ref: PoolRef): string;
}

export function fileStore(): FileRaw {
  const root = scratchDir("file");
  const dir = join(root, "store");
  const walk = (path: string, out: string[]) => {
    let names: string[];
    try {
      names = readdirSync(path).sort();
    } catch {
      return;
    }
    for (const name of names) {
      const child = join(path, name);
      if (statSync(child).isDirectory()) walk(child, out);
      else out.push(`${child.slice(dir.length)} ${readFileSync(child).toString("base64")}`);
    }
  };
  return {
    name: "file",
    ipam: { data_dir: dir },
    open: () => createFileStore({ dir }),
    poolFile(ref) {
      const network = ref.network === "" ? "_" : ref.network;
      const poolDir = join(dir, "pools", network, ref.cidr.replaceAll("/", "_2F"));
      const latest = readdirSync(poolDir)
        .filter((n) => n.endsWith(".json"))
        .sort()
        .at(-1);
      if (latest === undefined) throw new Error(`no generation in ${poolDir}`);
      return join(poolDir, latest);
    },
    async snapshot() {
      const out: string[] = [];
      walk(dir, out);
      return out.join("\n");
    },
    async close() {},
  };
}

export interface EtcdRaw extends RawStore {
  readonly client: Etcd3;
  readonly etcd: EtcdInstance;
  /** The key prefix of a pool (the CNI plugin's default layout). */
  poolPrefix(ref: PoolRef): string;
}

export async function etcdStore(): Promise<EtcdRaw> {
  const etcd = await startEtcd();
  const client = new Etcd3({ hosts: etcd.endpoint });
  const keys = layout("/ipamkit/");
  return {
    name: "etcd",
    etcd,
    client,
    ipam: { etcd_host: etcd.endpoint },
    open: () => createEtcdStore({ endpoints: [etcd.endpoint] }),
    poolPrefix: (ref) => keys.pool(ref),
    async snapshot() {
      const all = await client.getAll().prefix("/").exec();
      return all.kvs.map((kv) => `${kv.key.toString("utf8")} ${kv.mod_revision} ${kv.value.toString("base64")}`).join("\n");
    },
    async close() {
      client.close();
      await etcd.stop();
    },
  };
}

export interface KubeRaw extends RawStore {
  readonly server: KubeTestServer;
  readonly kubeconfig: string;
  readonly namespace: string;
  /** The IPPool object of a pool, as stored. */
  getPool(ref: PoolRef): Promise<Record<string, unknown> & { spec: Record<string, unknown> }>;
  /** PUT an object as it is (the test server validates it as the real API server would). Returns the HTTP status. */
  putPool(ref: PoolRef, object: unknown): Promise<number>;
}

export async function kubeStore(options: { token?: string } = {}): Promise<KubeRaw> {
  const server = await startKubeTestServer({ port: 0, ...(options.token === undefined ? {} : { token: options.token }) });
  const namespace = "ipam";
  const kubeconfig = join(scratchDir("kube"), "whereabouts.kubeconfig");
  writeFileSync(kubeconfig, server.kubeconfig({ namespace }), { mode: 0o600 });
  const headers: Record<string, string> = {
    "content-type": "application/json",
    ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
  };
  const base = `${server.url}/apis/${GROUP}/${VERSION}/namespaces/${namespace}`;
  const url = (ref: PoolRef) => `${base}/${IPPOOL.plural}/${ipPoolName(ref)}`;
  return {
    name: "kubernetes",
    server,
    kubeconfig,
    namespace,
    ipam: { kubernetes: { kubeconfig } },
    open: () => createKubernetesStore({ kubeconfig }),
    async getPool(ref) {
      const res = await fetch(url(ref), { headers });
      if (res.status !== 200) throw new Error(`GET ${url(ref)}: ${res.status}`);
      return (await res.json()) as Record<string, unknown> & { spec: Record<string, unknown> };
    },
    async putPool(ref, object) {
      const res = await fetch(url(ref), { method: "PUT", headers, body: JSON.stringify(object) });
      await res.arrayBuffer();
      return res.status;
    },
    async snapshot() {
      const out: string[] = [];
      for (const plural of [IPPOOL.plural, RESERVATION.plural]) {
        const res = await fetch(`${base}/${plural}`, { headers });
        const list = (await res.json()) as { items?: unknown[] };
        for (const item of list.items ?? []) out.push(JSON.stringify(item));
      }
      return out.sort().join("\n");
    },
    async close() {
      await server.close();
    },
  };
}
