import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  attachmentKey,
  createIpam,
  InvalidRequestError,
  parseRange,
  StoreAccessDeniedError,
  StoreConflictError,
  StoreUnavailableError,
} from "@ipamkit/core";
import { type KubeTestServer, startKubeTestServer } from "@ipamkit/kube-test-server";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawObjects } from "../test/raw.js";
import { createKubernetesStore, DEFAULT_NAMESPACE } from "./index.js";
import { IPPOOL } from "./objects.js";

const range = parseRange({ range: "10.80.0.0/24" });
const ref = { network: "", cidr: range.cidr.text };
const key = attachmentKey({ containerId: "c1", ifName: "net1" });

const kubeconfigDirs: string[] = [];
afterAll(() => {
  for (const dir of kubeconfigDirs) rmSync(dir, { recursive: true, force: true });
});

/** A kubeconfig for `server` at `url`, optionally with a context namespace and a token (its dir removed after the file's tests). */
function kubeconfigFile(url: string, options: { namespace?: string; token?: string } = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "ipamkit-kc-"));
  kubeconfigDirs.push(dir);
  const path = join(dir, "kubeconfig");
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: url, "insecure-skip-tls-verify": true } }],
    users: [{ name: "u", user: options.token === undefined ? {} : { token: options.token } }],
    contexts: [{ name: "ctx", context: { cluster: "c", user: "u", ...(options.namespace ? { namespace: options.namespace } : {}) } }],
    "current-context": "ctx",
  };
  writeFileSync(path, JSON.stringify(config));
  return path;
}

describe("storage-kubernetes: configuration and failures", () => {
  let server: KubeTestServer;
  beforeAll(async () => {
    server = await startKubeTestServer({ port: 0, token: "secret-token" });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("uses the kubeconfig context's namespace, falls back to kube-system, and takes an override", async () => {
    const withNs = createKubernetesStore({ kubeconfig: kubeconfigFile(server.url, { namespace: "whereabouts", token: "secret-token" }) });
    await createIpam({ store: withNs }).allocate({ ranges: [range], key });
    const noNs = createKubernetesStore({ kubeconfig: kubeconfigFile(server.url, { token: "secret-token" }) });
    await createIpam({ store: noNs }).allocate({ ranges: [range], key });
    const override = createKubernetesStore({
      kubeconfig: kubeconfigFile(server.url, { namespace: "whereabouts", token: "secret-token" }),
      namespace: "other",
    });
    expect(await override.readPool(ref)).toBeUndefined();
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigFile(server.url, { token: "secret-token" }));
    for (const namespace of ["whereabouts", DEFAULT_NAMESPACE]) {
      expect((await rawObjects(kc, namespace).pool("10.80.0.0-24")).spec?.allocations).toHaveProperty("1");
    }
    await Promise.all([withNs.close(), noNs.close(), override.close()]);
  });

  it("rejects an invalid namespace and an unreadable kubeconfig with a typed error", () => {
    expect(() => createKubernetesStore({ kubeconfig: kubeconfigFile(server.url), namespace: "Bad_NS" })).toThrow(InvalidRequestError);
    expect(() => createKubernetesStore({ kubeconfig: "/nonexistent/kubeconfig" })).toThrow(
      /cannot load kubeconfig \/nonexistent\/kubeconfig/,
    );
  });

  it("a refused token is StoreAccessDeniedError (not retryable), never a silent success", async () => {
    const store = createKubernetesStore({ kubeconfig: kubeconfigFile(server.url, { token: "wrong" }), namespace: "denied" });
    const error = await createIpam({ store })
      .allocate({ ranges: [range], key })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreAccessDeniedError);
    expect((error as StoreAccessDeniedError).retryable).toBe(false);
    await store.close();
  });

  it("an unreachable API server is StoreUnavailableError (retryable)", async () => {
    const dead = await startKubeTestServer({ port: 0 });
    const url = dead.url;
    await dead.close();
    const store = createKubernetesStore({ kubeconfig: kubeconfigFile(url), namespace: "x" });
    const error = await store.readPool(ref).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as StoreUnavailableError).retryable).toBe(true);
    expect(String((error as Error).message)).toContain("get IPPool x/10.80.0.0-24");
    await store.close();
  });

  it("an API server that never answers times out after requestTimeoutMs as StoreUnavailableError", async () => {
    const silent: Server = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as { port: number }).port;
    const store = createKubernetesStore({ kubeconfig: kubeconfigFile(`http://127.0.0.1:${port}`), namespace: "x", requestTimeoutMs: 200 });
    const error = await store.readPool(ref).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    await store.close();
    silent.close();
  });

  it("a write over a version somebody else replaced meanwhile is a conflict and changes nothing", async () => {
    const path = kubeconfigFile(server.url, { namespace: "cas", token: "secret-token" });
    const store = createKubernetesStore({ kubeconfig: path });
    await createIpam({ store }).allocate({ ranges: [range], key });
    const stored = await store.readPool(ref);
    if (stored === undefined) throw new Error("missing");
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    const raw = rawObjects(kc, "cas");
    const other = await raw.pool("10.80.0.0-24");
    (other.spec as { allocations: Record<string, unknown> }).allocations["9"] = { id: "other", podref: "x/y", ifname: "net1" };
    await raw.replace(IPPOOL, other);
    await expect(store.writePool(ref, stored.pool, stored.version)).rejects.toThrow(StoreConflictError);
    expect((await raw.pool("10.80.0.0-24")).spec?.allocations).toHaveProperty("9");
    await store.close();
  });

  it("re-reads the kubeconfig file on every store: a rewritten token is picked up (Whereabouts' token watcher)", async () => {
    const path = kubeconfigFile(server.url, { namespace: "tokens", token: "wrong" });
    await expect(createKubernetesStore({ kubeconfig: path }).readPool(ref)).rejects.toThrow(StoreAccessDeniedError);
    writeFileSync(path, readFileSync(kubeconfigFile(server.url, { namespace: "tokens", token: "secret-token" }), "utf8"));
    const store = createKubernetesStore({ kubeconfig: path });
    expect(await store.readPool(ref)).toBeUndefined();
    await store.close();
  });
});
