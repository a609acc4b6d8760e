import { existsSync } from "node:fs";
import type { IpamStore } from "@ipamkit/core";
import { openStore as openSpec } from "@ipamkit/open-store/modules";
import type { KubeConfig } from "@kubernetes/client-node";
import { CliError } from "./errors.js";
import type { StoreSpec } from "./store-spec.js";

/** An opened store, and the kubeconfig it was opened with (Kubernetes: the audit reads pods there too). */
export interface OpenedStore {
  store: IpamStore;
  kubeConfig?: KubeConfig;
}

/** Loads a kubeconfig; one line naming the file when it cannot be loaded. */
export async function loadKube(path: string | undefined): Promise<KubeConfig> {
  const { loadKubeConfig } = await import("@ipamkit/storage-kubernetes");
  try {
    return loadKubeConfig(path);
  } catch (error) {
    throw new CliError(`bad kubeconfig: ${(error as Error).message.split("\n")[0]}`);
  }
}

/** Opens the store a spec names (@ipamkit/open-store); only that store's client is loaded. */
export async function openStore(spec: StoreSpec): Promise<OpenedStore> {
  switch (spec.datastore) {
    case "file": {
      const dir = spec.dataDir ?? "";
      if (!existsSync(dir)) throw new CliError(`no file store at ${dir} (the directory does not exist)`);
      return withPods(await openSpec({ datastore: "file", dir }), spec);
    }
    case "etcd": {
      const e = spec.etcd;
      if (e === undefined || e.endpoints.length === 0) throw new CliError("the etcd store needs endpoints (--etcd-endpoints or etcd_host)");
      return withPods(await openSpec({ datastore: "etcd", options: e }), spec);
    }
    case "kubernetes": {
      const kubeConfig = await loadKube(spec.kubeconfig);
      const { resolveNamespace } = await import("@ipamkit/storage-kubernetes");
      let namespace: string;
      try {
        namespace = resolveNamespace(kubeConfig, spec.namespace);
      } catch (error) {
        throw new CliError((error as Error).message.split("\n")[0] ?? "bad namespace");
      }
      const store = await openSpec({
        datastore: "kubernetes",
        kubeconfig: kubeConfig,
        namespace,
        onWarning: (m) => process.stderr.write(`warning: ${m}\n`),
      });
      return { store, kubeConfig };
    }
  }
}

/** A file or etcd store, with the kubeconfig given beside it for the audit's pod checks. */
async function withPods(store: IpamStore, spec: StoreSpec): Promise<OpenedStore> {
  if (spec.kubeconfig === undefined) return { store };
  try {
    return { store, kubeConfig: await loadKube(spec.kubeconfig) };
  } catch (error) {
    await store.close();
    throw error;
  }
}
