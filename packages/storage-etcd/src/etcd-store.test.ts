import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { attachmentKey, createIpam, type PoolRef, parseIp, parseRange, StoreAccessDeniedError, StoreUnavailableError } from "@ipamkit/core";
import { makeTestCertificates, startEtcd } from "@ipamkit/etcd-launcher";
import { Etcd3 } from "etcd3";
import { describe, expect, inject, it } from "vitest";
import { createEtcdStore, etcdOptionsFromWhereabouts, layout } from "./index.js";

const endpoint = inject("etcdEndpoint");
const key = (id: string) => attachmentKey({ containerId: id, ifName: "eth0" });

describe("key layout", () => {
  it("is documented, reversible, and keeps the unnamed network and odd names apart", () => {
    const l = layout("/ipamkit");
    expect(l.meta({ network: "", cidr: "10.0.0.0/24" })).toBe("/ipamkit/pools/_/10.0.0.0%2F24/meta");
    expect(l.ip({ network: "blue", cidr: "2001:db8::/64" }, 5n)).toBe("/ipamkit/pools/blue/2001%3Adb8%3A%3A%2F64/ip/5");
    expect(l.key({ network: "", cidr: "10.0.0.0/24" }, "c1/eth0")).toBe("/ipamkit/pools/_/10.0.0.0%2F24/key/c1%2Feth0");
    expect(l.claim({ network: "_", address: "10.0.0.5" })).toBe("/ipamkit/claims/%5F/10.0.0.5");
    for (const ref of [
      { network: "", cidr: "10.0.0.0/24" },
      { network: "_", cidr: "10.0.0.0/24" },
      { network: "a/b", cidr: "fd00::/8" },
    ]) {
      expect(l.parsePool(l.meta(ref))).toEqual(ref);
    }
    expect(l.parsePool("/ipamkit/pools/only-one-segment/meta")).toBeUndefined();
    expect(l.parsePool(l.ip({ network: "", cidr: "10.0.0.0/24" }, 1n))).toBeUndefined();
  });
});

describe("options", () => {
  it("maps Whereabouts' etcd_* keys", () => {
    expect(
      etcdOptionsFromWhereabouts({
        etcd_host: "etcd-0:2379, etcd-1:2379",
        etcd_username: "ipam",
        etcd_password: "s3cret",
        etcd_ca_cert_file: "/etc/ca.pem",
        etcd_cert_file: "/etc/cert.pem",
        etcd_key_file: "/etc/key.pem",
      }),
    ).toEqual({
      endpoints: ["etcd-0:2379", "etcd-1:2379"],
      username: "ipam",
      password: "s3cret",
      tls: { caFile: "/etc/ca.pem", certFile: "/etc/cert.pem", keyFile: "/etc/key.pem" },
    });
  });
});

describe("on a real etcd", () => {
  it("writes an allocation's address, key index and overlapping-range claim in one transaction", async () => {
    const prefix = `/same-txn/${process.pid}/`;
    const store = createEtcdStore({ endpoints: [endpoint], prefix });
    const range = parseRange({ range: "10.7.0.0/24" });
    await createIpam({ store }).allocate({ ranges: [range], key: key("a") });
    const pool = await store.readPool({ network: "", cidr: range.cidr.text });
    const claim = await store.readClaim({ network: "", address: "10.7.0.1" });
    expect(claim?.claim.key).toEqual(key("a"));
    expect(claim?.version).toBe(pool?.version); // one revision: one transaction
    const raw = new Etcd3({ hosts: endpoint });
    const ip = await raw.get(layout(prefix).ip({ network: "", cidr: range.cidr.text }, 1n)).exec();
    const index = await raw.get(layout(prefix).key({ network: "", cidr: range.cidr.text }, "a/eth0")).exec();
    expect(ip.kvs[0]?.mod_revision).toBe(claim?.version);
    expect(index.kvs[0]?.value.toString()).toBe("1");
    raw.close();
    await createIpam({ store }).release({ ranges: [range], key: key("a") });
    const client = new Etcd3({ hosts: endpoint });
    const released = await client.get(layout(prefix).meta({ network: "", cidr: range.cidr.text })).exec();
    expect(await store.readClaim({ network: "", address: "10.7.0.1" })).toBeUndefined();
    expect(released.header.revision).toBe(released.kvs[0]?.mod_revision); // delete and pool write: one revision
    client.close();
    await store.close();
  });

  it("reads and lists past gRPC's 4 MiB answer limit: every range is paged at one revision", async () => {
    const prefix = `/paged/${process.pid}/`;
    const raw = new Etcd3({ hosts: endpoint });
    // 5 000 keys of 1 KB names under one pool: ~5 MB of keys alone, more than one answer may carry
    const pool = `${prefix}pools/big/10.9.0.0%2F16/`;
    const names = Array.from({ length: 5_000 }, (_, i) => `${pool}key/${String(i).padStart(5, "0")}-${"x".repeat(1_000)}`);
    for (let i = 0; i < names.length; i += 100) {
      const batch = raw.if(`${pool}meta`, "Create", "==", 0).then(...names.slice(i, i + 100).map((k) => raw.put(k).value("1")));
      await batch.commit();
    }
    // what one range gets (its own client: the failure opens that client's circuit breaker)
    const probe = new Etcd3({ hosts: endpoint });
    const whole = await probe
      .getAll()
      .prefix(`${prefix}pools/`)
      .keys()
      .catch((error: Error) => error);
    probe.close();
    expect(String(whole)).toMatch(/RESOURCE_EXHAUSTED|larger than max/);
    const store = createEtcdStore({ endpoints: [endpoint], prefix });
    expect(await store.listPools()).toEqual([{ network: "big", cidr: "10.9.0.0/16" }]);
    await store.close();
    // a pool read spanning pages equals the single-page read, at one revision
    const small = `/paged-pool/${process.pid}/`;
    const writer = createEtcdStore({ endpoints: [endpoint], prefix: small });
    const range = parseRange({ range: "10.8.0.0/24" });
    for (let i = 0; i < 25; i++) await createIpam({ store: writer }).allocate({ ranges: [range], key: key(`p${i}`) });
    const ref = { network: "", cidr: range.cidr.text };
    const whole1 = await writer.readPool(ref);
    const paged = createEtcdStore({ endpoints: [endpoint], prefix: small, rangePageSize: 3 });
    const inPages = await paged.readPool(ref);
    expect(inPages?.pool.reservations().map((r) => `${r.offset}:${r.key.containerId}`)).toEqual(
      whole1?.pool.reservations().map((r) => `${r.offset}:${r.key.containerId}`),
    );
    expect(inPages?.version).toBe(whole1?.version);
    expect(inPages?.pool.reservations()).toHaveLength(25);
    // a scan of several pools spanning pages (a pool's keys split between pages) reads each as readPool does
    const second = parseRange({ range: "10.7.0.0/28" });
    for (let i = 0; i < 5; i++) await createIpam({ store: writer }).allocate({ network: "b", ranges: [second], key: key(`q${i}`) });
    const scanned = (await paged.listPools({ contents: true })).map((x) => ("stored" in x ? x : undefined));
    expect(scanned.map((x) => x?.ref)).toEqual(await writer.listPools());
    for (const x of scanned) {
      const read = await writer.readPool(x?.ref as PoolRef);
      expect(x?.stored.version).toBe(read?.version);
      expect(x?.stored.pool.reservations()).toEqual(read?.pool.reservations());
    }
    expect(scanned.map((x) => x?.stored.pool.size)).toEqual([25, 5]);
    expect(() => createEtcdStore({ endpoints: [endpoint], rangePageSize: 0 })).toThrow(/rangePageSize 0/);
    await Promise.all([writer.close(), paged.close()]);
    await raw.delete().prefix(prefix).exec();
    raw.close();
  });

  it("answers a retryable error within the deadline when etcd is unreachable", async () => {
    const store = createEtcdStore({ endpoints: ["127.0.0.1:9"], dialTimeoutMs: 300, requestTimeoutMs: 700 });
    const started = Date.now();
    const error = await createIpam({ store })
      .allocate({ ranges: [parseRange({ range: "10.8.0.0/24" })], key: key("a") })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as StoreUnavailableError).retryable).toBe(true);
    expect(Date.now() - started).toBeLessThan(3_000);
    await store.close();
  });

  it("over mutual TLS: works with the client certificate; without one it is a retryable unavailable error", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ipamkit-etcd-tls-"));
    const tls = makeTestCertificates(dir);
    const etcd = await startEtcd({ tls });
    try {
      const range = parseRange({ range: "10.11.0.0/24" });
      const store = createEtcdStore({
        endpoints: [etcd.endpoint.replace("https://", "")],
        tls: { caFile: tls.ca, certFile: tls.clientCert, keyFile: tls.clientKey },
      });
      const [a] = await createIpam({ store }).allocate({ ranges: [range], key: key("a") });
      expect(a?.address).toEqual(parseIp("10.11.0.1"));
      await store.close();
      const noCert = createEtcdStore({ endpoints: [etcd.endpoint], tls: { caFile: tls.ca }, dialTimeoutMs: 500, requestTimeoutMs: 1_000 });
      await expect(noCert.readPool({ network: "", cidr: range.cidr.text })).rejects.toBeInstanceOf(StoreUnavailableError);
      await noCert.close();
    } finally {
      await etcd.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("with password auth: works with the right password; a wrong one is a typed error that never shows the password", async () => {
    const etcd = await startEtcd();
    try {
      const ctl = (...args: string[]) =>
        execFileSync("etcdctl", [`--endpoints=${etcd.endpoint}`, ...args], { stdio: "pipe", env: { ...process.env, ETCDCTL_API: "3" } });
      ctl("user", "add", "root:root-Pa55word");
      ctl("user", "add", "ipam:ipam-Pa55word");
      ctl("role", "add", "ipam");
      ctl("role", "grant-permission", "--prefix=true", "ipam", "readwrite", "/ipamkit/");
      ctl("user", "grant-role", "ipam", "ipam");
      ctl("auth", "enable");
      const range = parseRange({ range: "10.9.0.0/24" });
      const good = createEtcdStore({ endpoints: [etcd.endpoint], username: "ipam", password: "ipam-Pa55word" });
      const [a] = await createIpam({ store: good }).allocate({ ranges: [range], key: key("a") });
      expect(a?.reused).toBe(false);
      await good.close();
      const bad = createEtcdStore({
        endpoints: [etcd.endpoint],
        username: "ipam",
        password: "wrong-Pa55word-XYZ",
        requestTimeoutMs: 2_000,
      });
      const error = await bad.readPool({ network: "", cidr: range.cidr.text }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreAccessDeniedError);
      expect((error as StoreAccessDeniedError).retryable).toBe(false);
      expect(inspect(error, { depth: 20 })).not.toContain("wrong-Pa55word-XYZ");
      expect(JSON.stringify(error, Object.getOwnPropertyNames(error as object))).not.toContain("wrong-Pa55word-XYZ");
      await bad.close();
      // outside its prefix the role has no permission
      const outside = createEtcdStore({ endpoints: [etcd.endpoint], username: "ipam", password: "ipam-Pa55word", prefix: "/elsewhere/" });
      await expect(outside.readPool({ network: "", cidr: range.cidr.text })).rejects.toBeInstanceOf(StoreAccessDeniedError);
      await outside.close();
    } finally {
      await etcd.stop();
    }
  });
});
