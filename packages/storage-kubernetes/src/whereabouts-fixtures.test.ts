import { readFileSync } from "node:fs";
import { attachmentKey, createIpam, formatIp, parseIp, parseRange, StoreCorruptError, StoreRejectedError } from "@ipamkit/core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { rawObjects } from "../test/raw.js";
import { type KubeEnv, kubeTargets } from "../test/targets.js";
import { createKubernetesStore } from "./index.js";
import { ANNOTATION, IPPOOL, type KubeObject, RESERVATION } from "./objects.js";

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../test/fixtures/${name}`, import.meta.url), "utf8")) as KubeObject[];
const POOLS = fixture("ippools.json");
const RESERVATIONS = fixture("reservations.json");
const specOf = (name: string) => structuredClone(POOLS.find((p) => p.metadata?.name === name)?.spec);

/** What Whereabouts' reader (`toIPReservationList`) keeps: keys that parse as signed 64-bit integers. */
function whereaboutsReads(object: KubeObject): string[] {
  const allocations = (object.spec?.allocations ?? {}) as Record<string, { id?: unknown; podref?: unknown }>;
  return Object.entries(allocations)
    .filter(
      ([key, entry]) => /^-?\d+$/.test(key) && BigInt(key) < 1n << 63n && typeof entry.id === "string" && typeof entry.podref === "string",
    )
    .map(([key]) => key);
}

for (const target of kubeTargets()) {
  describe(`Whereabouts' own objects on ${target.name}`, () => {
    let env: KubeEnv;
    let namespace: string;
    let raw: ReturnType<typeof rawObjects>;
    beforeAll(async () => {
      env = await target.start();
    });
    afterAll(async () => {
      await env?.close();
    });
    beforeEach(async () => {
      namespace = await env.namespace();
      raw = rawObjects(env.kubeConfig, namespace);
      for (const object of POOLS) await raw.create(IPPOOL, { ...structuredClone(object), metadata: { ...object.metadata, namespace } });
      for (const object of RESERVATIONS)
        await raw.create(RESERVATION, { ...structuredClone(object), metadata: { ...object.metadata, namespace } });
    });
    const store = (options: { whereaboutsCompatible?: boolean } = {}) =>
      createKubernetesStore({ kubeconfig: env.kubeConfig, namespace, ...options });

    it("lists and reads every pool Whereabouts wrote, IPv6 keys at and above 2^63 included", async () => {
      const s = store();
      expect(await s.listPools()).toEqual([
        { network: "", cidr: "10.10.0.0/16" },
        { network: "", cidr: "2001:db8::/64" },
        { network: "blue", cidr: "192.168.10.0/24" },
      ]);
      const v4 = (await s.readPool({ network: "", cidr: "10.10.0.0/16" }))?.pool;
      expect(v4?.reservations().map((r) => [r.offset, r.key.containerId.slice(0, 4), r.key.ifName, r.podRef])).toEqual([
        [1n, "6f2a", "net1", "default/web-0"],
        [2n, "0b1c", "", "default/legacy-7d9f"],
        [256n, "9a8b", "net2", "default/web-1"],
      ]);
      const v6 = (await s.readPool({ network: "", cidr: "2001:db8::/64" }))?.pool;
      expect(v6?.reservations().map((r) => formatIp({ family: 6, value: v6.cidr.network + r.offset }))).toEqual([
        "2001:db8::1",
        "2001:db8:0:0:8000::",
        "2001:db8::ffff:ffff:ffff:fffe",
      ]);
      expect((await s.readPool({ network: "blue", cidr: "192.168.10.0/24" }))?.pool.size).toBe(1);
      await s.close();
    });

    it("allocates around Whereabouts' entries and writes a pool Whereabouts still reads whole", async () => {
      const s = store();
      const ipam = createIpam({ store: s });
      const [a] = await ipam.allocate({
        ranges: [parseRange({ range: "10.10.0.0/16" })],
        key: attachmentKey({ containerId: "new1", ifName: "net1" }),
        podRef: "default/new",
      });
      expect(formatIp(a?.address ?? parseIp("0.0.0.0"))).toBe("10.10.0.3");
      const [b] = await ipam.allocate({
        ranges: [parseRange({ range: "2001:db8::/64" })],
        key: attachmentKey({ containerId: "new2", ifName: "net1" }),
      });
      expect(formatIp(b?.address ?? parseIp("::"))).toBe("2001:db8::2");
      const object = await raw.pool("10.10.0.0-16");
      const before = specOf("10.10.0.0-16") as { allocations: Record<string, unknown> };
      // Whereabouts' entries are untouched, byte for byte (the legacy one still has no ifname).
      const written = (object.spec?.allocations ?? {}) as Record<string, unknown>;
      for (const [key, entry] of Object.entries(before.allocations)) expect(written[key]).toEqual(entry);
      expect(whereaboutsReads(object).sort()).toEqual(["1", "2", "256", "3"]);
      expect(object.metadata?.generation).toBeDefined();
      await s.close();
    });

    it("round-trips: a read-then-write changes nothing but the allocations and ipamkit's annotations", async () => {
      const s = store();
      const name = "10.10.0.0-16";
      const extended = await raw.pool(name);
      extended.metadata = { ...extended.metadata, labels: { team: "net" } };
      ((extended.spec as { allocations: Record<string, Record<string, unknown>> }).allocations["1"] as Record<string, unknown>).color =
        "red";
      await raw.replace(IPPOOL, extended);
      const ref = { network: "", cidr: "10.10.0.0/16" };
      const stored = await s.readPool(ref);
      if (stored === undefined) throw new Error("pool missing");
      await s.writePool(ref, stored.pool, stored.version);
      const after = await raw.pool(name);
      expect(after.metadata?.labels).toEqual({ team: "net" });
      expect(after.spec?.allocations).toEqual(extended.spec?.allocations);
      expect(after.metadata?.annotations).not.toHaveProperty(ANNOTATION.staleAllocations);
      expect(after.metadata?.annotations).not.toHaveProperty(ANNOTATION.ifnames); // this CRD keeps ifname
      await s.close();
    });

    it("an overlapping pool never hands out an address Whereabouts holds; a dangling reservation is taken over", async () => {
      const s = store();
      const ipam = createIpam({ store: s });
      const range = parseRange({ range: "10.10.0.0/24" });
      const got: string[] = [];
      for (let i = 0; i < 7; i++) {
        const [a] = await ipam.allocate({
          ranges: [range],
          key: attachmentKey({ containerId: `ov${i}`, ifName: "net1" }),
          podRef: `default/ov${i}`,
        });
        got.push(formatIp(a?.address ?? parseIp("0.0.0.0")));
      }
      // .1 and .2 are held by the /16 pool (its reservations name no pool: the pools decide);
      // .9's reservation is dangling (no pool holds it) and is taken over after fencing.
      expect(got).toEqual(["10.10.0.3", "10.10.0.4", "10.10.0.5", "10.10.0.6", "10.10.0.7", "10.10.0.8", "10.10.0.9"]);
      const nine = await raw.get(RESERVATION, "10.10.0.9");
      expect(nine.spec).toMatchObject({ podref: "default/ov6", containerid: "ov6", ifname: "net1" });
      expect(nine.metadata?.annotations?.[ANNOTATION.range]).toBe("10.10.0.0/24");
      const legacy = await s.readClaim({ network: "", address: "10.10.0.2" });
      expect(legacy?.claim).toMatchObject({
        pool: { network: "", cidr: "10.10.0.0/16" },
        key: { ifName: "" },
        podRef: "default/legacy-7d9f",
      });
      await s.close();
    });

    it("lists Whereabouts' reservations per network, including :: and network_name forms", async () => {
      const s = store();
      expect(await s.listClaims("")).toEqual([
        { network: "", address: "10.10.0.1" },
        { network: "", address: "10.10.0.2" },
        { network: "", address: "10.10.0.9" },
        { network: "", address: "2001:db8:0:0:8000::" },
        { network: "", address: "2001:db8::1" },
      ]);
      expect(await s.listClaims("blue")).toEqual([{ network: "blue", address: "192.168.10.5" }]);
      await s.close();
    });

    it("scans Whereabouts' reservations as it reads each: the holder resolved from the pools, per network asked", async () => {
      const s = store();
      const scanned = await s.listClaims(["blue", ""], { contents: true });
      expect(scanned.map((x) => x.ref)).toEqual([{ network: "blue", address: "192.168.10.5" }, ...(await s.listClaims(""))]);
      for (const x of scanned) expect(x.stored).toEqual(await s.readClaim(x.ref));
      expect(scanned.find((x) => x.ref.address === "10.10.0.2")?.stored.claim).toMatchObject({
        pool: { network: "", cidr: "10.10.0.0/16" },
        podRef: "default/legacy-7d9f",
      });
      await s.close();
    });

    it("DEL of its container's attachment frees a Whereabouts entry without ifname, and its reservation", async () => {
      const s = store();
      const ipam = createIpam({ store: s });
      const id = (specOf("10.10.0.0-16") as { allocations: Record<string, { id: string }> }).allocations["2"]?.id as string;
      const range = parseRange({ range: "10.10.0.0/16" });
      // another container's DEL frees nothing
      expect(await ipam.release({ ranges: [range], key: attachmentKey({ containerId: "someone-else", ifName: "net1" }) })).toHaveLength(0);
      expect((await s.readPool({ network: "", cidr: "10.10.0.0/16" }))?.pool.size).toBe(3);
      // the entry's interface is unknown: the container's DEL (any interface, no exact entry) frees it
      const released = await ipam.release({ ranges: [range], key: attachmentKey({ containerId: id, ifName: "net1" }) });
      expect(released.map((r) => formatIp(r.address))).toEqual(["10.10.0.2"]);
      expect((await s.readPool({ network: "", cidr: "10.10.0.0/16" }))?.pool.size).toBe(2);
      await expect(raw.get(RESERVATION, "10.10.0.2")).rejects.toMatchObject({ code: 404 });
      await s.close();
    });

    it("ADD of that container adopts the Whereabouts entry (same address, ifname recorded); its DEL frees it", async () => {
      const s = store();
      const ipam = createIpam({ store: s });
      const id = (specOf("10.10.0.0-16") as { allocations: Record<string, { id: string }> }).allocations["2"]?.id as string;
      const range = parseRange({ range: "10.10.0.0/16" });
      const key = attachmentKey({ containerId: id, ifName: "net1" });
      const [a] = await ipam.allocate({ ranges: [range], key, podRef: "default/legacy-7d9f" });
      expect(a && formatIp(a.address)).toBe("10.10.0.2");
      const entries = (await raw.pool("10.10.0.0-16")).spec?.allocations as Record<string, unknown>;
      expect(entries["2"]).toMatchObject({ id, ifname: "net1" });
      expect((await s.readPool({ network: "", cidr: "10.10.0.0/16" }))?.pool.size).toBe(3);
      expect((await ipam.release({ ranges: [range], key })).map((r) => formatIp(r.address))).toEqual(["10.10.0.2"]);
      await expect(raw.get(RESERVATION, "10.10.0.2")).rejects.toMatchObject({ code: 404 });
      await s.close();
    });

    it("reports an entry it cannot parse and never drops it on a write", async () => {
      const s = store();
      const name = "10.10.0.0-16";
      const object = await raw.pool(name);
      (object.spec as { allocations: Record<string, unknown> }).allocations["-1"] = { id: "neg", podref: "a/b" };
      await raw.replace(IPPOOL, object);
      await expect(s.readPool({ network: "", cidr: "10.10.0.0/16" })).rejects.toThrow(StoreCorruptError);
      await expect(s.readPool({ network: "", cidr: "10.10.0.0/16" })).rejects.toThrow(/"-1"/);
      const ipam = createIpam({ store: s });
      await expect(
        ipam.allocate({ ranges: [parseRange({ range: "10.10.0.0/16" })], key: attachmentKey({ containerId: "x", ifName: "net1" }) }),
      ).rejects.toThrow(StoreCorruptError);
      expect((await raw.pool(name)).spec?.allocations).toHaveProperty("-1");
      await s.close();
    });

    it("writes an offset ≥ 2^63 that its ORIP guards (Whereabouts drops the key, its overlap check meets the ORIP); refuses it unguarded unless told not to care", async () => {
      const high = "2001:db8::8000:0:0:1";
      const request = (containerId: string) => ({
        ranges: [parseRange({ range: "2001:db8::/64" })],
        key: attachmentKey({ containerId, ifName: "net1" }),
        addresses: [high],
      });
      const compatible = store();
      await expect(createIpam({ store: compatible, overlappingRanges: false }).allocate(request("hi"))).rejects.toThrow(StoreRejectedError);
      const [guarded] = await createIpam({ store: compatible }).allocate(request("hi"));
      expect(guarded && formatIp(guarded.address)).toBe(high);
      expect((await raw.pool("2001-db8---64")).spec?.allocations).toHaveProperty(((1n << 63n) + 1n).toString());
      expect(await raw.list(RESERVATION)).toContainEqual(
        expect.objectContaining({ metadata: expect.objectContaining({ name: "2001-db8--8000-0-0-1" }) }),
      );
      await createIpam({ store: compatible }).release({
        ranges: [parseRange({ range: "2001:db8::/64" })],
        key: attachmentKey({ containerId: "hi", ifName: "net1" }),
      });
      await compatible.close();
      const free = store({ whereaboutsCompatible: false });
      const [a] = await createIpam({ store: free, overlappingRanges: false }).allocate(request("free"));
      expect(a && formatIp(a.address)).toBe(high);
      expect((await raw.pool("2001-db8---64")).spec?.allocations).toHaveProperty(((1n << 63n) + 1n).toString());
      await free.close();
    });
  });
}
