import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export interface DemoRow {
  step: string;
  pod: string;
  result: string;
}

interface Call {
  command: string;
  containerId?: string;
  pod?: string;
  uid?: string;
  extra?: Record<string, unknown>;
}

/**
 * The real demo: runs the built CNI binary (as a runtime would, one process per call) on the
 * embedded file store in `dir`, over two ranges (dual-stack).
 */
export function runCniDemo(plugin: string, dir: string): DemoRow[] {
  writeFileSync(join(dir, "whereabouts.conf"), "{}");
  const conf = {
    cniVersion: "1.1.0",
    name: "demo-net",
    type: "macvlan",
    ipam: {
      type: "ipamkit",
      range: "10.10.0.0/24",
      exclude: ["10.10.0.2"],
      ipRanges: [{ range: "fd00:10::/64" }],
      gateway: "10.10.0.1",
      data_dir: join(dir, "store"),
    },
  };
  const call = (c: Call) => {
    const [ns, name] = (c.pod ?? "default/x").split("/");
    const r = spawnSync(plugin, [], {
      input: JSON.stringify({ ...conf, ...c.extra }),
      encoding: "utf8",
      env: {
        PATH: process.env.PATH,
        CNI_COMMAND: c.command,
        CNI_CONTAINERID: c.containerId ?? "",
        CNI_IFNAME: "net1",
        CNI_NETNS: "/var/run/netns/demo",
        CNI_PATH: "/opt/cni/bin",
        CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns};K8S_POD_NAME=${name};K8S_POD_UID=${c.uid ?? "uid"}`,
        // this demo's node: its (empty) flat file, never one under /etc/cni
        IPAMKIT_CONFIGURATION_PATH: dir,
      },
    });
    const out = r.stdout.trim() === "" ? undefined : (JSON.parse(r.stdout) as { ips?: { address: string }[]; code?: number; msg?: string });
    if (r.status !== 0) return { ok: false, text: `error ${out?.code}: ${out?.msg ?? r.stderr}`, json: out };
    return { ok: true, text: out?.ips?.map((i) => i.address).join(", ") ?? "ok", json: out };
  };
  const rows: DemoRow[] = [];
  const row = (step: string, pod: string, result: string) => rows.push({ step, pod, result });

  const pods = ["web-0", "web-1", "web-2", "db-0"];
  const results = new Map<string, unknown>();
  for (const pod of pods) {
    const r = call({ command: "ADD", containerId: `sandbox-${pod}-a`, pod: `default/${pod}`, uid: `uid-${pod}-a` });
    results.set(pod, r.json);
    row("ADD (dual-stack)", `default/${pod}`, r.text);
  }
  row("ADD again (idempotent)", "default/web-0", call({ command: "ADD", containerId: "sandbox-web-0-a", pod: "default/web-0" }).text);
  row(
    "CHECK against its ADD result",
    "default/web-0",
    call({ command: "CHECK", containerId: "sandbox-web-0-a", extra: { prevResult: results.get("web-0") } }).text,
  );
  row("DEL", "default/web-2", call({ command: "DEL", containerId: "sandbox-web-2-a" }).text);
  row("DEL again (idempotent)", "default/web-2", call({ command: "DEL", containerId: "sandbox-web-2-a" }).text);
  // The seed scenario: db-0's node dies; the pod is reborn elsewhere under the same name.
  row(
    "ADD reborn after its node died",
    "default/db-0",
    call({ command: "ADD", containerId: "sandbox-db-0-b", pod: "default/db-0", uid: "uid-db-0-b" }).text,
  );
  row("DEL the dead node's sandbox (exact key)", "default/db-0", call({ command: "DEL", containerId: "sandbox-db-0-a" }).text);
  row(
    "CHECK the reborn pod still holds its IPs",
    "default/db-0",
    call({
      command: "CHECK",
      containerId: "sandbox-db-0-b",
      extra: { prevResult: call({ command: "ADD", containerId: "sandbox-db-0-b", pod: "default/db-0", uid: "uid-db-0-b" }).json },
    }).text,
  );
  // GC: web-1's sandbox is gone without a DEL; the runtime lists what is still valid.
  const valid = ["sandbox-web-0-a", "sandbox-db-0-b"].map((containerID) => ({ containerID, ifname: "net1" }));
  row("GC (valid: web-0, db-0)", "-", call({ command: "GC", extra: { "cni.dev/valid-attachments": valid } }).text);
  row(
    "ADD after GC reuses freed IPs",
    "default/web-9",
    call({ command: "ADD", containerId: "sandbox-web-9-a", pod: "default/web-9" }).text,
  );
  row("STATUS", "-", call({ command: "STATUS" }).text);
  return rows;
}

/** A readable table. */
export function formatTable(rows: DemoRow[]): string {
  const w = [Math.max(4, ...rows.map((r) => r.step.length)), Math.max(3, ...rows.map((r) => r.pod.length))];
  const line = (a: string, b: string, c: string) => `${a.padEnd(w[0] ?? 0)}  ${b.padEnd(w[1] ?? 0)}  ${c}`;
  return [
    line("step", "pod", "result"),
    line("-".repeat(w[0] ?? 0), "-".repeat(w[1] ?? 0), "------"),
    ...rows.map((r) => line(r.step, r.pod, r.result)),
  ].join("\n");
}
