// helm (test-infra/helm) and the chart's path: the same as the real-node suite's
export { CHART, helmBinary } from "@ipamkit/node-launcher";

/** A rendered Kubernetes object, loosely typed for assertions. */
export interface Rendered {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: rendered manifests are checked field by field
  [key: string]: any;
}
