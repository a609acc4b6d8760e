import { z } from "zod";

/**
 * The raw result files the figures are generated from, as the benchmarks write them (each with
 * the envelope of raw-file.ts; only the fields the figures use are checked, the rest is kept).
 */

const envelope = {
  bench: z.string(),
  commit: z.string(),
  dirty: z.boolean(),
  date: z.string(),
  command: z.string(),
};

/** examples/cni-plugin bench/whereabouts-interop.bench.ts */
export const WhereaboutsInterop = z.looseObject({
  ...envelope,
  whereabouts: z.string(),
  kubernetes: z.string(),
  calls: z.number(),
  batch: z.number(),
  modes: z.array(
    z.looseObject({
      id: z.string(),
      name: z.string(),
      addMedianMs: z.number(),
      addP90Ms: z.number(),
      delMedianMs: z.number(),
      delP90Ms: z.number(),
      burstAddS: z.array(z.number()),
      burstDelS: z.array(z.number()),
      failed: z.number(),
      duplicates: z.number(),
      left: z.array(z.string()),
    }),
  ),
});

/** examples/cni-plugin bench/cni.bench.ts */
export const Cni = z.looseObject({
  ...envelope,
  runs: z.number(),
  single: z.object({
    nodeMs: z.number(),
    directAddMs: z.number(),
    directDelMs: z.number(),
    agentAddMs: z.number(),
    agentDelMs: z.number(),
  }),
  byAllocations: z.array(z.object({ allocations: z.number(), hostLocalMs: z.number(), directMs: z.number(), agentMs: z.number() })),
});

/** examples/cni-plugin bench/add-vs-node.sh (hyperfine) */
export const AddVsNode = z.looseObject({
  ...envelope,
  runs: z.number(),
  results: z.array(z.looseObject({ command: z.string(), medianMs: z.number() })),
});

const usPerOp = z.array(z.object({ case: z.string(), ipamkitUs: z.number(), linearScanUs: z.number() }));
/** packages/core bench/allocator.bench.ts */
export const Core = z.looseObject({ ...envelope, byCount: usPerOp, bySize: usPerOp });

const storeRows = z.array(z.looseObject({ id: z.string(), name: z.string(), seconds: z.number(), conflicts: z.number().optional() }));
/** packages/storage-etcd bench/etcd.bench.ts */
export const Etcd = z.looseObject({ ...envelope, n: z.number(), rows: storeRows });
/** packages/storage-kubernetes bench/kubernetes.bench.ts */
export const Kubernetes = z.looseObject({
  ...envelope,
  n: z.number(),
  rows: storeRows,
  objectBytes: z.array(z.object({ entries: z.string(), at1k: z.number(), at10k: z.number(), largestUnderLimit: z.number() })),
});

/** packages/storage-etcd bench/block-walk.bench.ts */
export const BlockWalk = z.looseObject({
  ...envelope,
  nodes: z.number(),
  meanRequests: z.object({ oneByOne: z.number(), readAhead: z.number() }),
});

const sample = { cpuMs: z.number(), wallMs: z.number() };
/** packages/reconciler bench/reconcile.bench.ts */
export const Reconcile = z.looseObject({
  ...envelope,
  planning: z.looseObject({ ...sample, reservations: z.number() }),
  lookups: z.looseObject(sample),
});

const way = z.looseObject({ wallMs: z.number(), cpuMs: z.number(), requests: z.array(z.number()) });
/** packages/reconciler bench/power-cycle.bench.ts */
export const PowerCycle = z.looseObject({
  ...envelope,
  stores: z.array(z.looseObject({ store: z.string(), fullPass: z.looseObject({ released: z.number(), readEach: way, bulk: way }) })),
});

const audit = z.object({ heldTwice: z.number(), lost: z.number(), leaked: z.number() });
const step = z.object({ calls: z.number(), requests: z.record(z.string(), z.number()) });
/** examples/cluster-sim `pnpm sim --json` */
export const Sim = z.looseObject({
  ...envelope,
  pods: z.number().optional(),
  floor: z.array(z.object({ label: z.string(), calls: z.number(), seconds: z.number() })),
  runs: z.array(
    z.looseObject({
      ipam: z.enum(["ipamkit", "whereabouts"]),
      ipamLabel: z.string(),
      store: z.string(),
      nodes: z.number(),
      blockSize: z.number().nullable(),
      pods: z.number(),
      networks: z.number(),
      phases: z.array(
        z.looseObject({
          phase: z.string(),
          seconds: z.number(),
          adds: z.number(),
          failed: z.number(),
          audit,
          cpu: z.object({ harness: z.number(), cni: z.number(), agents: z.number(), store: z.number(), machine: z.number() }).optional(),
          steps: z.object({ ADD: step.optional(), DEL: step.optional() }).optional(),
        }),
      ),
    }),
  ),
});

/** The real node's churn (packages/node-launcher bench:churn), the lead's; a commit is not always recorded. */
export const NodeChurn = z.looseObject({
  commit: z.string().optional(),
  dirty: z.boolean().optional(),
  date: z.string(),
  wave: z.number(),
  pods: z.number().optional(),
  rounds: z.number().optional(),
  summary: z.array(
    z.looseObject({
      ipam: z.string(),
      pods: z.number(),
      problems: z.array(z.unknown()).optional(),
      medianMs: z.number(),
      p90Ms: z.number(),
      waveMedianS: z.number(),
      freedMedianS: z.number(),
    }),
  ),
});

/** Pods moved on the real two-node cluster (the lead's); a commit is not always recorded. */
export const ClusterMove = z.looseObject({
  commit: z.string().optional(),
  dirty: z.boolean().optional(),
  date: z.string().optional(),
  summary: z.array(
    z.looseObject({
      ipam: z.string(),
      toRunningMedianS: z.number(),
      deadFreed: z.number(),
      deadEntries: z.number(),
      freedWhileLive: z.number(),
    }),
  ),
});

export type SimFile = z.infer<typeof Sim>;
export type SimRunOf = SimFile["runs"][number];
export type SimPhase = SimRunOf["phases"][number];
