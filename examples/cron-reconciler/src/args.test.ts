import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadAllYaml } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { DEFAULT_SCHEDULE, parseDuration, parseOptions, UsageError } from "./args.js";

describe("parseOptions", () => {
  it("defaults: kubernetes store, Whereabouts' schedule, 5 min grace, leader election on", () => {
    expect(parseOptions([])).toMatchObject({
      datastore: "kubernetes",
      schedule: DEFAULT_SCHEDULE,
      graceMs: 300_000,
      leaderElection: true,
      overlappingRanges: true,
      claimSettleMs: 5_000,
      once: false,
      watch: false,
      dryRun: false,
    });
  });

  it("durations", () => {
    expect(parseDuration("--grace", "90")).toBe(90_000);
    expect(parseDuration("--grace", "250ms")).toBe(250);
    expect(parseDuration("--grace", "1.5m")).toBe(90_000);
    expect(parseDuration("--grace", "2h")).toBe(7_200_000);
    expect(() => parseDuration("--grace", "-1m")).toThrow(UsageError);
  });

  it("etcd options; the password only from a file", () => {
    const o = parseOptions([
      "--datastore",
      "etcd",
      "--etcd-endpoints",
      "http://127.0.0.1:2379, http://127.0.0.2:2379",
      "--etcd-password-file",
      "/p",
    ]);
    expect(o).toMatchObject({ etcd: { endpoints: ["http://127.0.0.1:2379", "http://127.0.0.2:2379"], passwordFile: "/p" } });
    expect(() => parseOptions(["--datastore", "etcd", "--etcd-endpoints", "x", "--etcd-password", "secret"])).toThrow(/Unknown option/);
  });

  it("--node-slices: off by default; on the Kubernetes store only, and not with --watch", () => {
    expect(parseOptions([])).toMatchObject({ nodeSlices: false });
    expect(parseOptions(["--node-slices", "true"])).toMatchObject({ nodeSlices: true });
    expect(() => parseOptions(["--node-slices", "yes"])).toThrow(/--node-slices: expected true or false/);
    expect(() => parseOptions(["--node-slices", "true", "--datastore", "file", "--data-dir", "/d"])).toThrow(
      /needs --datastore kubernetes/,
    );
    expect(() => parseOptions(["--node-slices", "true", "--watch"])).toThrow(/not used with --watch/);
  });

  it("settings that a mode would ignore are refused, not ignored", () => {
    expect(() => parseOptions(["--once", "--schedule", "* * * * *"])).toThrow(/--schedule is not used with --once/);
    expect(() => parseOptions(["--resync", "1m"])).toThrow(/--resync is only used with --watch/);
    expect(() => parseOptions(["--namespace", "x", "--datastore", "file", "--data-dir", "/d"])).toThrow(/--namespace is only used/);
  });

  it("the Deployment manifest's arguments parse", () => {
    const docs = loadAllYaml(readFileSync(join(import.meta.dirname, "..", "deployment.yaml"), "utf8")) as {
      kind: string;
      spec?: { template: { spec: { containers: { args: string[] }[] } } };
    }[];
    const deployment = docs.find((d) => d.kind === "Deployment");
    const args = deployment?.spec?.template.spec.containers[0]?.args ?? [];
    expect(args.length).toBeGreaterThan(0);
    expect(parseOptions(args)).toMatchObject({ scheduleFile: "/cron-schedule/config", graceMs: 300_000, leaseNamespace: "kube-system" });
  });
});

it("the README shows the Deployment manifest verbatim", () => {
  const root = join(import.meta.dirname, "..");
  const manifest = readFileSync(join(root, "deployment.yaml"), "utf8").trimEnd();
  expect(readFileSync(join(root, "README.md"), "utf8")).toContain(`\`\`\`yaml\n${manifest}\n\`\`\``);
});
