import { existsSync, statSync } from "node:fs";
import { holdPort } from "@ipamkit/etcd-launcher";
import { CoreV1Api, CustomObjectsApi, KubeConfig, VersionApi } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { binaryPaths, cacheDir, requiredVersion } from "./binaries.js";
import { type KubeApiserver, startKubeApiserver } from "./launcher.js";

describe("binaries", () => {
  it("reads the pinned versions from go.mod, in either require form, never from a tool line", () => {
    const goMod =
      "module x\n\nrequire go.etcd.io/etcd/server/v3 v3.7.0\n\nrequire (\n\tk8s.io/kubernetes v1.37.2 // indirect\n)\n\ntool k8s.io/kubernetes/cmd/kube-apiserver\n";
    expect(requiredVersion(goMod, "k8s.io/kubernetes")).toBe("v1.37.2");
    expect(requiredVersion(goMod, "go.etcd.io/etcd/server/v3")).toBe("v3.7.0");
    expect(requiredVersion(goMod, "k8s.io/api")).toBeUndefined();
  });

  it("keys the cache by version, outside the repository", () => {
    const paths = binaryPaths({ HOME: "/home/u" });
    expect(paths.kubeApiserver).toMatch(/^\/home\/u\/\.cache\/ipamkit\/kube-apiserver-v1\.\d+\.\d+\/kube-apiserver$/);
    expect(paths.etcd).toMatch(/^\/home\/u\/\.cache\/ipamkit\/etcd-v3\.\d+\.\d+\/etcd$/);
    expect(cacheDir({ XDG_CACHE_HOME: "/x" })).toBe("/x/ipamkit");
    expect(cacheDir({ IPAMKIT_CACHE_DIR: "/y", XDG_CACHE_HOME: "/x" })).toBe("/y");
  });

  it("a missing build is a loud error naming the build script, never a skip", async () => {
    await expect(startKubeApiserverWithCache("/nonexistent-ipamkit-cache")).rejects.toThrow(/not built: .*build\.sh/);
  });
});

async function startKubeApiserverWithCache(dir: string) {
  const saved = process.env.IPAMKIT_CACHE_DIR;
  process.env.IPAMKIT_CACHE_DIR = dir;
  try {
    return await startKubeApiserver();
  } finally {
    if (saved === undefined) delete process.env.IPAMKIT_CACHE_DIR;
    else process.env.IPAMKIT_CACHE_DIR = saved;
  }
}

describe("startKubeApiserver", () => {
  let server: KubeApiserver;
  beforeAll(async () => {
    server = await startKubeApiserver({ namespaces: ["ipam"], namespace: "ipam" });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("serves the pinned Kubernetes version over TLS that the kubeconfig's CA verifies", async () => {
    const version = await server.kubeConfig.makeApiClient(VersionApi).getCode();
    expect(version.gitVersion).toBe(server.versions.kubernetes);
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(statSync(server.kubeconfigPath).mode & 0o777).toBe(0o600);
    const fromFile = new KubeConfig();
    fromFile.loadFromFile(server.kubeconfigPath);
    expect(fromFile.getContextObject(fromFile.getCurrentContext())?.namespace).toBe("ipam");
  });

  it("requires the token: another one is 401", async () => {
    const response = await fetch(`${server.url}/api/v1/namespaces`, { headers: { authorization: "Bearer wrong" } }).catch(
      (error: unknown) => error,
    );
    // fetch does not know the CA; the https module does
    expect(response).toBeInstanceOf(Error);
    const status = await new Promise<number>((resolve, reject) => {
      import("node:https").then(({ get }) =>
        get(`${server.url}/api/v1/namespaces`, { ca: server.ca, headers: { authorization: "Bearer wrong" } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        }).on("error", reject),
      );
    });
    expect(status).toBe(401);
  });

  it("has installed the project's CRDs and created the namespaces", async () => {
    const custom = server.kubeConfig.makeApiClient(CustomObjectsApi);
    for (const plural of ["ippools", "overlappingrangeipreservations", "nodeslicepools"]) {
      const list = (await custom.listNamespacedCustomObject({
        group: "whereabouts.cni.cncf.io",
        version: "v1alpha1",
        namespace: "ipam",
        plural,
      })) as {
        items: unknown[];
      };
      expect(list.items).toEqual([]);
    }
    const ns = await server.kubeConfig.makeApiClient(CoreV1Api).readNamespace({ name: "ipam" });
    expect(ns.status?.phase).toBe("Active");
  });

  it("stop() ends both processes and removes the temporary dir", async () => {
    const other = await startKubeApiserver({ crds: [] });
    expect(other.startMs).toBeGreaterThan(0);
    await other.stop();
    expect(existsSync(other.kubeconfigPath)).toBe(false);
    const after = await fetch(`${other.etcd.endpoint}/health`).catch((error: unknown) => error);
    expect(after).toBeInstanceOf(Error);
  });

  it("starts again on a fresh port when the port it picked was taken before kube-apiserver bound it", async () => {
    // another process binds the port after it was found free, before kube-apiserver binds it
    const taken = await holdPort();
    const picked = taken.picked;
    try {
      const other = await startKubeApiserver({ crds: [], pickPort: taken.pickPort });
      try {
        expect(picked).toHaveLength(2);
        expect(other.url).toBe(`https://127.0.0.1:${picked[1]}`);
        const version = await other.kubeConfig.makeApiClient(VersionApi).getCode();
        expect(version.gitVersion).toBe(other.versions.kubernetes);
      } finally {
        await other.stop();
      }
    } finally {
      taken.release();
    }
  });
});
