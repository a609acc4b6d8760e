import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadIpamConfig } from "@ipamkit/cni";
import { type EtcdInstance, startEtcd } from "@ipamkit/etcd-launcher";
import { startKubeTestServer } from "@ipamkit/kube-test-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultStoreModules, openStore } from "./modules.js";
import { createStoreOpener, type StoreModules, type StoreSpec, storeSpecOfConfig } from "./open-store.js";

const pool = { network: "", cidr: "10.9.0.0/24" };

/** The real modules, recording which were loaded. */
function recording(): { modules: StoreModules; loaded: string[] } {
  const loaded: string[] = [];
  const modules: StoreModules = {
    file: () => {
      loaded.push("file");
      return defaultStoreModules.file();
    },
    etcd: () => {
      loaded.push("etcd");
      return defaultStoreModules.etcd();
    },
    kubernetes: () => {
      loaded.push("kubernetes");
      return defaultStoreModules.kubernetes();
    },
  };
  return { modules, loaded };
}

let dir: string;
let etcd: EtcdInstance;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-open-store-"));
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("open-store", () => {
  it("opens each store a spec names, loading only that store's module", async () => {
    const server = await startKubeTestServer({ port: 0 });
    const kubeconfig = join(dir, "kubeconfig");
    await server.writeKubeconfig(kubeconfig, { namespace: "kube-system" });
    try {
      const specs: StoreSpec[] = [
        { datastore: "file", dir: join(dir, "file") },
        { datastore: "etcd", options: { endpoints: [etcd.endpoint], prefix: "/open-store-a/" } },
        { datastore: "etcd", whereabouts: { etcd_host: etcd.endpoint } },
        { datastore: "kubernetes", kubeconfig },
      ];
      for (const spec of specs) {
        const { modules, loaded } = recording();
        const store = await createStoreOpener(modules).open(spec);
        try {
          expect(await store.readPool(pool)).toBeUndefined();
        } finally {
          await store.close();
        }
        expect(loaded).toEqual([spec.datastore]);
      }
    } finally {
      await server.close();
    }
  });

  it("maps a CNI config to the store the plugin opens", async () => {
    // store credentials are the node's: they come from its flat file (at the second default location)
    const flatPath = "/etc/cni/net.d/whereabouts.d/whereabouts.conf";
    const load = (ipam: Record<string, unknown>, flat?: Record<string, unknown>) =>
      loadIpamConfig(JSON.stringify({ cniVersion: "1.0.0", name: "n", ipam: { type: "ipamkit", range: "10.9.0.0/24", ...ipam } }), {
        fs: { exists: (path) => flat !== undefined && path === flatPath, readText: () => JSON.stringify(flat) },
        command: "ADD",
      });
    expect(storeSpecOfConfig(load({ data_dir: join(dir, "cni") }))).toEqual({ datastore: "file", dir: join(dir, "cni") });
    expect(storeSpecOfConfig(load({}, { etcd_host: etcd.endpoint, etcd_username: "u" }))).toEqual({
      datastore: "etcd",
      whereabouts: { etcd_host: etcd.endpoint, etcd_username: "u" },
    });
    const store = await openStore(storeSpecOfConfig(load({ data_dir: join(dir, "cni") })));
    await store.close();
  });

  it("load() loads a store's code without opening anything; a failing loader's error is what open answers", async () => {
    const { modules, loaded } = recording();
    const opener = createStoreOpener(modules);
    await opener.load("etcd");
    expect(loaded).toEqual(["etcd"]);
    const broken = createStoreOpener({ ...modules, kubernetes: () => Promise.reject(new Error("no Kubernetes bundle")) });
    await expect(broken.load("kubernetes")).rejects.toThrow("no Kubernetes bundle");
    await expect(broken.open({ datastore: "kubernetes" })).rejects.toThrow("no Kubernetes bundle");
  });
});
