import { spawnSync } from "node:child_process";
import { parseAllDocuments } from "yaml";
import { CHART, helmBinary, type Rendered } from "./helm.js";
import { tempDir } from "./run.js";

// helm (test-infra/helm) run on charts/ipamkit for the chart's tests: each run with a HOME of its own.

export const NAMESPACE = "ipamkit-system";
export const ETCD_VALUES = [
  "--set",
  "store.type=etcd",
  "--set",
  "store.etcd.endpoints={https://10.0.0.5:2379,https://10.0.0.6:2379}",
  "--set",
  "store.etcd.tls.secretName=etcd-client",
];
/** Every optional part on: ServiceMonitor, PrometheusRule, cni.uninstall, extras. */
export const ALL_ON = [
  "--set",
  "metrics.serviceMonitor.enabled=true",
  "--set",
  "metrics.prometheusRule.enabled=true",
  "--set",
  "cni.uninstall=true",
  "--set",
  "image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
];

/** helm's note that crds/crds.yaml is a symlink (to packages/storage-kubernetes/manifests/crds.yaml, so the CRDs are not forked). */
const SYMLINK_NOTE =
  /^level=INFO msg="found symbolic link in path\. Contents of linked file included and used" path=\S+crds\/crds\.yaml .*\n/gm;

/** Runs helm with a HOME of its own; stderr without the symlink note. */
export function helmRun(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(helmBinary(), args, { encoding: "utf8", env: { PATH: process.env.PATH, HOME: tempDir("ipamkit-helm-home-") } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr.replace(SYMLINK_NOTE, "") };
}

/** `helm template` of the chart with `values`, parsed; the CRDs too when `crds`. */
export function template(values: string[] = [], crds = false): Rendered[] {
  const r = helmRun(["template", "ipamkit", CHART, "--namespace", NAMESPACE, ...(crds ? ["--include-crds"] : []), ...values]);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  // a document of comments only is null
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJSON() as Rendered | null)
    .filter((o): o is Rendered => o !== null);
}

/** helm's refusal of `values` (its stderr), or a failure when it renders them. */
export function refusal(values: string[]): string {
  const r = helmRun(["template", "x", CHART, ...values]);
  if (r.code === 0) throw new Error(`helm rendered ${values.join(" ")}`);
  return r.stderr;
}

export const find = (objects: Rendered[], kind: string, name: string): Rendered => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name} rendered`);
  return found;
};

/** The node DaemonSet's pod spec. */
export const nodePod = (objects: Rendered[]) => find(objects, "DaemonSet", "ipamkit-node").spec.template.spec;
/** The reconciler Deployment's pod spec. */
export const reconcilerPod = (objects: Rendered[]) => find(objects, "Deployment", "ipamkit-reconciler").spec.template.spec;
/** A container of a pod spec by name (init containers too). */
export const container = (pod: Rendered, name: string): Rendered => {
  const found = [...(pod.initContainers ?? []), ...pod.containers].find((c: Rendered) => c.name === name);
  if (found === undefined) throw new Error(`no container ${name}`);
  return found;
};
