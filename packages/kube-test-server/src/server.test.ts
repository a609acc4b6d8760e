import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomObjectsApi, KubeConfig, KubernetesObjectApi } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MAX_OBJECT_BYTES, SERVED_KINDS, startKubeTestServer } from "./index.js";
import { API_VERSION, failure, type Harness, ippool, ippools, metadataOf, NS, raw, standIn, startHarness } from "./test-support.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ maxObjectBytes: 4096 });
});
afterAll(async () => {
  await h.close();
});

describe("HTTP surface", () => {
  it("answers unknown paths with a 404 Status and unsupported verbs with a 405 Status, always as application/json", async () => {
    for (const path of [
      "/nothing",
      "/apis/example.com/v1/things",
      `/apis/${API_VERSION}/namespaces/${NS}/widgets`,
      `/apis/${API_VERSION}/namespaces/${NS}/ippools/x/status`,
    ]) {
      const response = await raw(h, "GET", path);
      expect(response.status).toBe(404);
      expect(response.headers.get("content-type")).toBe("application/json");
      expect(response.body).toMatchObject({ kind: "Status", reason: "NotFound", code: 404 });
    }
    const post = await raw(h, "POST", `/apis/${API_VERSION}/namespaces/${NS}/ippools/x`, ippool("x"));
    expect(post.status).toBe(405);
    expect(post.body).toMatchObject({ kind: "Status", reason: "MethodNotAllowed", code: 405 });
    expect((await raw(h, "DELETE", `/apis/${API_VERSION}/namespaces/${NS}/ippools`)).status).toBe(405);
    const created = await raw(h, "POST", `/apis/${API_VERSION}/namespaces/${NS}/ippools`, ippool("json"));
    expect(created.headers.get("content-type")).toBe("application/json");
  });

  it("serves discovery: /version, /api, /apis and the group versions (client-node's KubernetesObjectApi resolves kinds with it)", async () => {
    expect((await raw(h, "GET", "/version")).body).toMatchObject({ major: "1", gitVersion: expect.any(String) });
    expect((await raw(h, "GET", "/api")).body).toMatchObject({ kind: "APIVersions", versions: ["v1"] });
    const groups = (await raw(h, "GET", "/apis")).body as { groups: { name: string }[] };
    expect(groups.groups.map((g) => g.name).sort()).toEqual(["coordination.k8s.io", "whereabouts.cni.cncf.io"]);
    const core = (await raw(h, "GET", "/api/v1")).body as { resources: { name: string }[] };
    expect(core.resources.map((r) => r.name)).toEqual(["pods", "pods/status"]);
    const objects = KubernetesObjectApi.makeApiClient(h.kubeConfig);
    const created = await objects.create({
      apiVersion: API_VERSION,
      kind: "NodeSlicePool",
      metadata: { name: "generic", namespace: NS },
      spec: { range: "10.0.0.0/8", sliceSize: "/24" },
    });
    expect(metadataOf(created).uid).toBeDefined();
    expect(SERVED_KINDS.map((k) => k.plural)).toEqual(["ippools", "overlappingrangeipreservations", "nodeslicepools", "pods", "leases"]);
  });

  it("refuses request bodies over 3 MiB with 413", async () => {
    const huge = ippool("huge", { metadata: { annotations: { big: "x".repeat(3 * 1024 * 1024) } } });
    const response = await raw(h, "POST", `/apis/${API_VERSION}/namespaces/${NS}/ippools`, huge);
    expect(response.status).toBe(413);
    expect(response.body).toMatchObject({ reason: "RequestEntityTooLarge", message: "Request entity too large: limit is 3145728" });
  });

  it("refuses objects over maxObjectBytes as etcd does (500 'etcdserver: request is too large'), and stores the largest that fit", async () => {
    const withAllocations = (count: number) =>
      ippool("sized", {
        spec: {
          range: "10.0.0.0/16",
          allocations: Object.fromEntries(Array.from({ length: count }, (_, i) => [String(i), { id: `c${i}`, podref: `ns/p${i}` }])),
        },
      });
    let fits = 0;
    for (let count = 1; ; count++) {
      const response = await raw(h, "POST", `/apis/${API_VERSION}/namespaces/size/ippools`, withAllocations(count));
      if (response.status !== 201) {
        expect(response.status).toBe(500);
        expect(response.body).toEqual({
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          message: "etcdserver: request is too large",
          code: 500,
        });
        break;
      }
      fits = count;
      expect(Buffer.byteLength(JSON.stringify(response.body))).toBeLessThanOrEqual(4096);
      await h.custom.deleteNamespacedCustomObject({ ...ippools("size"), name: "sized" });
    }
    expect(fits).toBeGreaterThan(10);
    const stored = await raw(h, "POST", `/apis/${API_VERSION}/namespaces/size/ippools`, withAllocations(fits));
    expect(stored.status).toBe(201);
    const grown = await failure(
      h.custom.replaceNamespacedCustomObject({
        ...ippools("size"),
        name: "sized",
        body: { ...withAllocations(fits + 1), metadata: (stored.body as { metadata: object }).metadata },
      }),
    );
    expect(grown.code).toBe(500);
    expect(DEFAULT_MAX_OBJECT_BYTES).toBe(1_572_864);
  });

  it("injects a fault once (failNext) and counts requests by verb, status and resource (stats)", async () => {
    const before = standIn(h).stats();
    standIn(h).failNext({
      method: "GET",
      pathPrefix: `/apis/${API_VERSION}/namespaces/${NS}/ippools/`,
      status: 503,
      message: "etcd is down",
    });
    const injected = await failure(h.custom.getNamespacedCustomObject({ ...ippools(), name: "json" }));
    expect(injected).toMatchObject({ code: 503, status: { reason: "ServiceUnavailable", message: "etcd is down" } });
    await h.custom.getNamespacedCustomObject({ ...ippools(), name: "json" });
    const after = standIn(h).stats();
    expect(after.requests - before.requests).toBe(2);
    expect((after.byStatus[503] ?? 0) - (before.byStatus[503] ?? 0)).toBe(1);
    expect((after.byVerb.get ?? 0) - (before.byVerb.get ?? 0)).toBe(2);
    expect((after.byResource["get ippools"] ?? 0) - (before.byResource["get ippools"] ?? 0)).toBe(2);
    await h.custom.listNamespacedCustomObject({ ...ippools() });
    expect(standIn(h).stats().byResource["list ippools"]).toBe((after.byResource["list ippools"] ?? 0) + 1);
  });

  it("writes a kubeconfig file for client-node, with the context namespace", async () => {
    const dir = await mkdtemp(join(tmpdir(), "kube-test-server-"));
    try {
      const file = join(dir, "config");
      await standIn(h).writeKubeconfig(file, { namespace: "ctx-ns" });
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      const config = new KubeConfig();
      config.loadFromFile(file);
      expect(config.getContextObject(config.getCurrentContext())?.namespace).toBe("ctx-ns");
      expect(config.getCurrentCluster()).toMatchObject({ server: standIn(h).url, skipTLSVerify: true });
      expect(JSON.parse(await readFile(file, "utf8"))).toMatchObject({ kind: "Config" });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("listens on 127.0.0.1 only", async () => {
    await expect(startKubeTestServer({ host: "0.0.0.0" })).rejects.toThrow(/127\.0\.0\.1 only/);
    expect(standIn(h).url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
});

describe("bearer token", () => {
  it("answers 401 without the token and serves with it", async () => {
    const server = await startKubeTestServer({ token: "s3cret" });
    try {
      const withToken = new KubeConfig();
      withToken.loadFromString(server.kubeconfig());
      await withToken.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({ ...ippools(), body: ippool("authed") });

      const anonymous = new KubeConfig();
      anonymous.loadFromString(server.kubeconfig().replace('"token": "s3cret"', '"token": "wrong"'));
      const { code } = await failure(anonymous.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ ...ippools(), name: "authed" }));
      expect(code).toBe(401);
      const response = await raw(server, "GET", "/api/v1/pods");
      expect(response.status).toBe(401);
      expect(response.body).toMatchObject({ kind: "Status", reason: "Unauthorized", code: 401, message: "Unauthorized" });
    } finally {
      await server.close();
    }
  });
});
