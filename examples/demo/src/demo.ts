import { type Assigned, attachmentKey, createIpam, formatIp, type IpamStore, parseRange } from "@ipamkit/core";

export interface DemoStep {
  step: string;
  result: string;
}

const text = (a: readonly (Pick<Assigned, "address"> | undefined)[]) =>
  a.map((x) => (x === undefined ? "-" : formatIp(x.address))).join(", ");

/** The demo scenario: dual-stack allocation, idempotent repeat, exact-key release, the seed scenario, overlap protection. */
export async function runDemo(store: IpamStore): Promise<DemoStep[]> {
  const ranges = [
    parseRange({ range: "10.10.0.0/24", gateway: "10.10.0.1", exclude: ["10.10.0.2"] }),
    parseRange({ range: "fd00:10::/64", gateway: "fd00:10::1" }),
  ];
  const ipam = createIpam({ store });
  const steps: DemoStep[] = [];
  const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });

  const web0 = await ipam.allocate({ ranges, key: key("sandbox-web-0"), podRef: "default/web-0", podUid: "uid-web-0" });
  steps.push({ step: "ADD default/web-0 (dual-stack)", result: text(web0) });
  steps.push({ step: "ADD default/web-0 again (idempotent)", result: text(await ipam.allocate({ ranges, key: key("sandbox-web-0") })) });

  // The seed scenario: db-0's node is powered off; the pod is reborn elsewhere under the same name.
  const stale = await ipam.allocate({ ranges, key: key("sandbox-db-0-old"), podRef: "default/db-0", podUid: "uid-old" });
  const live = await ipam.allocate({ ranges, key: key("sandbox-db-0-new"), podRef: "default/db-0", podUid: "uid-new" });
  steps.push({ step: "ADD default/db-0 on node A (later powered off)", result: text(stale) });
  steps.push({ step: "ADD default/db-0 reborn on node B", result: text(live) });
  const freed = await ipam.release({ ranges, key: key("sandbox-db-0-old") });
  steps.push({ step: "DEL the stale sandbox (exact key)", result: `freed ${text(freed)}` });
  const still = await ipam.lookup({ ranges, key: key("sandbox-db-0-new") });
  steps.push({ step: "reborn db-0 still holds", result: text(still) });
  steps.push({
    step: "DEL the stale sandbox again (idempotent)",
    result: `freed ${(await ipam.release({ ranges, key: key("sandbox-db-0-old") })).length} addresses`,
  });

  // Overlapping ranges in one network never share an address.
  const narrow = [parseRange({ range: "10.10.0.0/28", gateway: "10.10.0.1", exclude: ["10.10.0.2"] })];
  steps.push({
    step: "ADD in overlapping 10.10.0.0/28 (skips .3, .5 held in /24)",
    result: text(await ipam.allocate({ ranges: narrow, key: key("sandbox-batch-0") })),
  });
  steps.push({ step: "conflicts retried", result: String(ipam.conflicts.conflicts) });
  return steps;
}
