import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { attachmentKey, createIpam, formatIp, formatKey, type IpamStore, parseRange } from "@ipamkit/core";
import { binaryPaths, type KubeApiserver, PROJECT_CRDS, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api, dumpYaml, loadAllYaml } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { rawObjects } from "../test/raw.js";
import { createKubernetesStore } from "./index.js";
import { idTag } from "./ippool.js";
import { ANNOTATION, API_VERSION, IPPOOL, type KubeObject, RESERVATION } from "./objects.js";

// Whereabouts < 0.8 ships CRDs without `ifname` (IPPool entries: id and podref only; ORIPs:
// containerid and podref), so a real API server prunes ipamkit's `ifname`, `poduid` and `created`.
// Derived here from ipamkit's own manifest, and run on a real kube-apiserver (the stand-in test
// server serves only the shipped CRDs).

// biome-ignore lint/suspicious/noExplicitAny: a CRD manifest edited in place, field by field
type Schema = Record<string, any>;

/** ipamkit's CRDs with what Whereabouts v0.6.x's lack: no entry ifname/poduid/created, nothing unknown kept, no ORIP ifname. */
function whereaboutsV06Crds(dir: string): string {
  const crds = loadAllYaml(readFileSync(PROJECT_CRDS, "utf8")) as Schema[];
  for (const crd of crds) {
    const version = crd.spec.versions[0];
    const spec = version.schema.openAPIV3Schema.properties.spec;
    if (crd.spec.names.kind === "IPPool") {
      const entry = spec.properties.allocations.additionalProperties;
      for (const field of ["ifname", "poduid", "created", "sticky", "released"]) delete entry.properties[field];
      delete entry["x-kubernetes-preserve-unknown-fields"];
    }
    if (crd.spec.names.kind === "OverlappingRangeIPReservation") {
      delete spec.properties.ifname;
      version.additionalPrinterColumns = version.additionalPrinterColumns.filter((c: Schema) => c.jsonPath !== ".spec.ifname");
    }
  }
  const file = join(dir, "crds-whereabouts-v0.6.yaml");
  writeFileSync(file, crds.map((crd) => dumpYaml(crd)).join("---\n"));
  return file;
}

const range = parseRange({ range: "10.20.0.0/24" });
const ref = { network: "", cidr: range.cidr.text };
const POOL = "10.20.0.0-24";
const key = (id: string, ifName: string) => attachmentKey({ containerId: id, ifName });

describe(`a CRD without ifname (Whereabouts < 0.8) on kube-apiserver ${binaryPaths().kubernetesVersion}`, () => {
  let server: KubeApiserver;
  let dir: string;
  let namespace: string;
  let raw: ReturnType<typeof rawObjects>;
  const warnings: string[] = [];
  let seq = 0;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ipamkit-legacy-crd-"));
    server = await startKubeApiserver({ crds: [whereaboutsV06Crds(dir)] });
  });
  afterAll(async () => {
    await server?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    namespace = `legacy-crd-${process.pid}-${seq++}`;
    await server.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    raw = rawObjects(server.kubeConfig, namespace);
  });

  /** One store per call, as the CNI plugin opens one per process. */
  async function call<T>(run: (ipam: ReturnType<typeof createIpam>, store: IpamStore) => Promise<T>): Promise<T> {
    const store = createKubernetesStore({ kubeconfig: server.kubeConfig, namespace, onWarning: (m) => warnings.push(m) });
    try {
      return await run(createIpam({ store }), store);
    } finally {
      await store.close();
    }
  }
  const add = async (k: ReturnType<typeof key>) =>
    call(async (ipam) => {
      const [a] = await ipam.allocate({ ranges: [range], key: k, podRef: `ns/${k.containerId}`, podUid: "u" });
      return a === undefined ? "none" : formatIp(a.address);
    });
  const del = async (k: ReturnType<typeof key>) =>
    call(async (ipam) => (await ipam.release({ ranges: [range], key: k })).map((r) => formatIp(r.address)));
  const keys = async () =>
    call(async (_, store) => (await store.readPool(ref))?.pool.reservations().map((r) => `${r.offset}=${formatKey(r.key)}`));
  const allocations = async () => (await raw.pool(POOL)).spec?.allocations as Record<string, Record<string, unknown>>;

  it("ipamkit's own attachments keep their exact keys: a repeat ADD gets no second address, each DEL frees its own; one warning", async () => {
    expect([await add(key("c1", "net1")), await add(key("c1", "net2")), await add(key("c2", "net1"))]).toEqual([
      "10.20.0.1",
      "10.20.0.2",
      "10.20.0.3",
    ]);
    // the server pruned ifname (and poduid, created): the annotation carries the interfaces
    expect(await allocations()).toEqual({
      "1": { id: "c1", podref: "ns/c1" },
      "2": { id: "c1", podref: "ns/c1" },
      "3": { id: "c2", podref: "ns/c2" },
    });
    expect(JSON.parse((await raw.pool(POOL)).metadata?.annotations?.[ANNOTATION.ifnames] ?? "{}")).toEqual({
      "1": `net1 ${idTag("c1")}`,
      "2": `net2 ${idTag("c1")}`,
      "3": `net1 ${idTag("c2")}`,
    });
    expect(await keys()).toEqual(["1=c1/net1", "2=c1/net2", "3=c2/net1"]);
    expect([await add(key("c1", "net2")), await add(key("c1", "net1")), await add(key("c2", "net1"))]).toEqual([
      "10.20.0.2",
      "10.20.0.1",
      "10.20.0.3",
    ]);
    // the ORIPs lost spec.ifname too, yet each DEL deletes its own (the claim's key survives in an annotation)
    expect((await raw.list(RESERVATION)).map((o) => o.spec)).toEqual([
      { podref: "ns/c1", containerid: "c1" },
      { podref: "ns/c1", containerid: "c1" },
      { podref: "ns/c2", containerid: "c2" },
    ]);
    expect(await del(key("c1", "net2"))).toEqual(["10.20.0.2"]);
    expect(await keys()).toEqual(["1=c1/net1", "3=c2/net1"]);
    expect(await del(key("c1", "net1"))).toEqual(["10.20.0.1"]);
    expect(await del(key("c2", "net1"))).toEqual(["10.20.0.3"]);
    expect(await allocations()).toEqual({});
    expect(await raw.list(RESERVATION)).toEqual([]);
    // one warning for the whole process (every call above was a store of its own), naming what to apply
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/ifname, poduid, created/);
    expect(warnings[0]).toMatch(/manifests\/crds\.yaml/);
  });

  it("an interface is trusted only while the entry keeps its container id (Whereabouts reused the offset)", async () => {
    expect(await add(key("c1", "net1"))).toBe("10.20.0.1");
    // Whereabouts freed it and gave it to another container; its patch of spec keeps the annotations
    const object = await raw.pool(POOL);
    (object.spec as { allocations: Record<string, unknown> }).allocations["1"] = { id: "wb", podref: "ns/wb" };
    await raw.replace(IPPOOL, object);
    expect(await keys()).toEqual(["1=wb/"]);
    expect(await del(key("c1", "net1"))).toEqual([]);
    // that container's ADD through ipamkit adopts the entry; the annotation is rewritten to match
    expect(await add(key("wb", "eth0"))).toBe("10.20.0.1");
    expect(await keys()).toEqual(["1=wb/eth0"]);
    expect(JSON.parse((await raw.pool(POOL)).metadata?.annotations?.[ANNOTATION.ifnames] ?? "{}")).toEqual({ "1": `eth0 ${idTag("wb")}` });
  });

  it("a pool in the shape v0.6.x writes (no ifname, one id twice) is served: adopted, freed, nothing left", async () => {
    const pool: KubeObject = {
      apiVersion: API_VERSION,
      kind: IPPOOL.kind,
      metadata: { name: POOL, namespace },
      spec: {
        range: range.cidr.text,
        allocations: {
          "1": { id: "A", podref: "ns/a" },
          "2": { id: "A", podref: "ns/a" },
          "3": { id: "B", podref: "ns/b" },
          "5": { id: "D", podref: "ns/d" },
        },
      },
    };
    await raw.create(IPPOOL, pool);
    for (const [n, id] of [
      [1, "A"],
      [2, "A"],
      [3, "B"],
      [5, "D"],
    ] as const)
      await raw.create(RESERVATION, {
        apiVersion: API_VERSION,
        kind: RESERVATION.kind,
        metadata: { name: `10.20.0.${n}`, namespace },
        spec: { containerid: id, podref: `ns/${id.toLowerCase()}` },
      });
    expect(await keys()).toEqual(["1=A/", "2=A/", "3=B/", "5=D/"]);
    // each interface's ADD adopts a distinct entry of its container, lowest first; repeats change nothing
    expect([await add(key("A", "net1")), await add(key("A", "net2")), await add(key("A", "net1")), await add(key("B", "eth0"))]).toEqual([
      "10.20.0.1",
      "10.20.0.2",
      "10.20.0.1",
      "10.20.0.3",
    ]);
    expect(await add(key("C", "eth0"))).toBe("10.20.0.4");
    expect(await keys()).toEqual(["1=A/net1", "2=A/net2", "3=B/eth0", "4=C/eth0", "5=D/"]);
    // DEL: exact entries, and D's entry (never adopted) by its container's DEL
    expect(await del(key("A", "net2"))).toEqual(["10.20.0.2"]);
    expect(await del(key("D", "eth0"))).toEqual(["10.20.0.5"]);
    expect(await del(key("A", "net1"))).toEqual(["10.20.0.1"]);
    expect(await del(key("B", "eth0"))).toEqual(["10.20.0.3"]);
    expect(await del(key("C", "eth0"))).toEqual(["10.20.0.4"]);
    expect(await allocations()).toEqual({});
    expect((await raw.list(RESERVATION)).map((o) => o.metadata?.name)).toEqual([]);
  });

  it("sticky degrades to non-sticky where the CRD prunes its fields, and the warning says so", async () => {
    const sticky = (k: ReturnType<typeof key>, podUid: string) =>
      call(async (ipam) => {
        const [a] = await ipam.allocate({ ranges: [range], key: k, podRef: "db/db-0", podUid, sticky: 60 });
        return a === undefined ? "none" : formatIp(a.address);
      });
    expect(await sticky(key("old", "net1"), "uid-1")).toBe("10.20.0.1");
    expect((await allocations())["1"]).toEqual({ id: "old", podref: "db/db-0" });
    // no UID and no sticky marker survived: the reborn pod is not given the old sandbox's address
    expect(await sticky(key("new", "net1"), "uid-2")).toBe("10.20.0.2");
    // and a DEL frees instead of keeping
    expect(
      await call(async (ipam) =>
        (await ipam.release({ ranges: [range], key: key("old", "net1"), sticky: true })).map((r) => formatIp(r.address)),
      ),
    ).toEqual(["10.20.0.1"]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/sticky addresses degrade to non-sticky/);
  });
});
