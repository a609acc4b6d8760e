import { readFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api, CustomObjectsApi, type KubernetesObject, KubernetesObjectApi, loadAllYaml } from "@kubernetes/client-node";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { exited, removeTempDirs, run, serviceAccountVolume, start, tempDir, until } from "../test/run.js";

// The written kubeconfig is the one the plugin really uses: a real kube-apiserver, the CNI
// ServiceAccount with the project's least-privilege Role, bound tokens from the TokenRequest API,
// the installed binary running ADD through it — and a revoked token replaced by rotation.

const INSTALL = join(inject("installDist"), "ipamkit-install");
const RBAC_CNI = fileURLToPath(new URL("../../../packages/storage-kubernetes/manifests/rbac-cni.yaml", import.meta.url));
let api: KubeApiserver;

beforeAll(async () => {
  api = await startKubeApiserver();
  const objects = loadAllYaml(readFileSync(RBAC_CNI, "utf8")) as KubernetesObject[];
  const client = KubernetesObjectApi.makeApiClient(api.kubeConfig);
  for (const object of objects) await client.create(object);
});
afterAll(async () => {
  await api?.stop();
  removeTempDirs();
});

/** A token of ipamkit-cni bound to the Secret `secret` (valid while the Secret exists). */
async function boundToken(secret: string): Promise<string> {
  const core = api.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({ namespace: "kube-system", body: { metadata: { name: secret } } });
  const review = await core.createNamespacedServiceAccountToken({
    name: "ipamkit-cni",
    namespace: "kube-system",
    body: { spec: { audiences: [], expirationSeconds: 3600, boundObjectRef: { apiVersion: "v1", kind: "Secret", name: secret } } },
  });
  return review.status?.token ?? "";
}

/** The status of GET /api with `token`. */
function statusWith(token: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(`${api.url}/api`, { ca: api.ca, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
    req.end();
  });
}

it("the installed plugin runs ADD with the written kubeconfig, and again after its revoked token rotates", async () => {
  const token1 = await boundToken("ipamkit-token-1");
  const root = tempDir("ipamkit-host-");
  const sa = join(root, "serviceaccount");
  const volume = serviceAccountVolume(sa, { token: token1, ca: api.ca, namespace: "kube-system" });
  const bin = join(root, "opt/cni/bin");
  const confDir = join(root, "etc/cni/net.d");
  const env = { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: new URL(api.url).port };
  const args = ["--source", inject("pluginDist"), "--host-root", "/", "--cni-bin-dir", bin, "--cni-conf-dir", confDir];
  const watcher = start(INSTALL, [...args, "--service-account-dir", sa, "--node-files", "--watch", "--interval-ms", "100"], env);
  try {
    const kubeconfig = join(confDir, "whereabouts.d/whereabouts.kubeconfig");
    await until("the kubeconfig", () => {
      try {
        return readFileSync(kubeconfig, "utf8").includes(token1);
      } catch {
        return false;
      }
    });
    // the NAD names only the flat file's directory: the kubeconfig comes from the flat file
    const conf = {
      cniVersion: "1.0.0",
      name: "installed-net",
      type: "macvlan",
      ipam: { type: "whereabouts", range: "10.77.0.0/24", configuration_path: join(confDir, "whereabouts.d") },
    };
    const cni = (id: string, pod: string) => ({
      CNI_COMMAND: "ADD",
      CNI_CONTAINERID: id,
      CNI_IFNAME: "net1",
      CNI_NETNS: "/var/run/netns/x",
      CNI_PATH: bin,
      CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod};K8S_POD_UID=uid-${pod}`,
      // the node's flat file: the same directory the NAD names (a Whereabouts NAD keeps working, silently)
      IPAMKIT_CONFIGURATION_PATH: join(confDir, "whereabouts.d"),
    });
    const add1 = await run(join(bin, "ipamkit"), [], cni("c1", "web-0"), JSON.stringify(conf));
    expect(add1.stderr).toBe("");
    expect(JSON.parse(add1.stdout)).toEqual({ cniVersion: "1.0.0", ips: [{ address: "10.77.0.1/24" }] });
    const pools = api.kubeConfig.makeApiClient(CustomObjectsApi);
    const pool = (await pools.getNamespacedCustomObject({
      group: "whereabouts.cni.cncf.io",
      version: "v1alpha1",
      namespace: "kube-system",
      plural: "ippools",
      name: "10.77.0.0-24",
    })) as { spec: { allocations: Record<string, { podref: string }> } };
    expect(pool.spec.allocations["1"]?.podref).toBe("default/web-0");

    // revoke token 1 (its bound Secret goes): the plugin, still on it, fails with a CNI error
    await api.kubeConfig.makeApiClient(CoreV1Api).deleteNamespacedSecret({ name: "ipamkit-token-1", namespace: "kube-system" });
    await until("token 1 rejected", async () => (await statusWith(token1)) === 401);
    const refused = await run(join(bin, "ipamkit"), [], cni("c2", "web-1"), JSON.stringify(conf));
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ code: expect.any(Number), msg: expect.stringMatching(/401|Unauthorized/i) });

    // the kubelet rotates the projected token: the watcher rewrites the kubeconfig, the next call works
    const token2 = await boundToken("ipamkit-token-2");
    volume.rotate(token2);
    await until("token 2 in the kubeconfig", () => readFileSync(kubeconfig, "utf8").includes(token2), 5_000);
    const add2 = await run(join(bin, "ipamkit"), [], cni("c2", "web-1"), JSON.stringify(conf));
    expect(JSON.parse(add2.stdout)).toEqual({ cniVersion: "1.0.0", ips: [{ address: "10.77.0.2/24" }] });
  } finally {
    watcher.child.kill("SIGTERM");
  }
  expect(await exited(watcher.child)).toBe(0);
});
