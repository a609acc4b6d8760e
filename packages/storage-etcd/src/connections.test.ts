import { readFileSync } from "node:fs";
import { startEtcd } from "@ipamkit/etcd-launcher";
import { expect, it } from "vitest";
import { createEtcdStore } from "./index.js";

/** Established TCP connections (IPv4, the whole network namespace) whose remote end is `port`. */
function connectionsTo(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  return readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .filter((line) => {
      const fields = line.trim().split(/\s+/);
      return fields[2]?.endsWith(`:${hex}`) === true && fields[3] === "01";
    }).length;
}

it("each store has its own connection: two stores in one process (an agent hosting several nodes) share none", async () => {
  // an etcd of its own: no other test's clients on its port
  const etcd = await startEtcd();
  const port = Number(new URL(etcd.endpoint).port);
  const stores = [createEtcdStore({ endpoints: [etcd.endpoint] }), createEtcdStore({ endpoints: [etcd.endpoint] })];
  try {
    const before = connectionsTo(port);
    for (const store of stores) await store.readPool({ network: "", cidr: "10.61.0.0/24" });
    expect(connectionsTo(port) - before).toBe(2);
  } finally {
    for (const store of stores) await store.close();
    await etcd.stop();
  }
});
