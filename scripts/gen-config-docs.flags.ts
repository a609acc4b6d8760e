// What docs/configuration.md says of each command-line option beyond what the programs say of
// themselves. scripts/gen-config-docs.ts checks these tables against the programs (the flags their
// --help names, commander's own option list) and takes each error from running the built program
// with `bad`, so neither a flag nor a message can drift.

export interface FlagDoc {
  /** Value placeholder shown after the flag (`PATH`), none for a switch. */
  value?: string;
  /** What it does (Markdown). For the CLI, commander's own description is used instead. */
  description?: string;
  default?: string;
  whereabouts: string;
  /** Arguments that make the program refuse them; the error line it prints is recorded. `$EMPTY_DIR`: a new empty directory. */
  bad?: string[];
}

/** examples/cni-plugin `ipamkit-agent` (its options are parsed in src/agent.ts). */
export const AGENT_FLAGS: Record<string, FlagDoc> = {
  socket: {
    value: "PATH",
    description: "Unix socket to answer on (absolute). One agent serves one node: given once.",
    default: "required",
    whereabouts: "— (every call is a new process)",
    bad: ["--socket", "run/ipamkit.sock"],
  },
  "node-name": {
    value: "NAME",
    description: "The node whose per-node blocks this agent owns.",
    default: "the host name",
    whereabouts: "`NODENAME` / the `nodename` file",
    bad: ["--socket", "/run/ipamkit.sock", "--node-name", "node 1"],
  },
  "log-level": {
    value: "LEVEL",
    description: "pino level.",
    default: "`info`",
    whereabouts: "`log_level`",
    bad: ["--socket", "/run/ipamkit.sock", "--log-level", "loud"],
  },
  warm: {
    value: "LIST",
    description: "Load these stores' code at start (`etcd,kubernetes,file`) rather than on the first call.",
    default: "none",
    whereabouts: "—",
    bad: ["--socket", "/run/ipamkit.sock", "--warm", "consul"],
  },
  "idle-timeout": {
    value: "SECONDS",
    description: "Close a client connection idle this long.",
    default: "10",
    whereabouts: "—",
    bad: ["--socket", "/run/ipamkit.sock", "--idle-timeout", "0"],
  },
  "drain-timeout": {
    value: "SECONDS",
    description: "On SIGTERM, let calls in flight finish for at most this long.",
    default: "10",
    whereabouts: "—",
    bad: ["--socket", "/run/ipamkit.sock", "--drain-timeout", "soon"],
  },
  "journal-interval": {
    value: "SECONDS",
    description:
      "Read the DEL journal (the node flat file's `agent_journal_dir`) this often, and at start: each record's DEL is replayed ([operation](operate.md#when-the-agent-is-down-the-del-journal)).",
    default: "10",
    whereabouts: "—",
    bad: ["--socket", "/run/ipamkit.sock", "--journal-interval", "0"],
  },
  "metrics-address": {
    value: "HOST:PORT",
    description: "Serve Prometheus `/metrics` and `/healthz` there.",
    default: "off",
    whereabouts: "—",
    bad: ["--socket", "/run/ipamkit.sock", "--metrics-address", "9100"],
  },
};

const once = ["--once"];

/** examples/cron-reconciler `main.js` (src/args.ts). */
export const RECONCILER_FLAGS: Record<string, FlagDoc> = {
  kubeconfig: {
    value: "PATH",
    description: "Where pods (and, by default, pools) come from.",
    default: "`KUBECONFIG`, `~/.kube/config`, then the in-cluster service account",
    whereabouts: "in-cluster service account",
    bad: [...once, "--kubeconfig", "/nonexistent/kubeconfig"],
  },
  namespace: {
    value: "NS",
    description: "Pool namespace (Kubernetes store).",
    default: "the kubeconfig context's, else `kube-system`",
    whereabouts: "`WHEREABOUTS_NAMESPACE`",
    bad: ["--datastore", "file", "--data-dir", "$EMPTY_DIR", "--namespace", "ipam"],
  },
  datastore: {
    value: "KIND",
    description: "`kubernetes`, `etcd` or `file`.",
    default: "`kubernetes`",
    whereabouts: "— (Kubernetes only)",
    bad: ["--datastore", "consul"],
  },
  "etcd-endpoints": {
    value: "URLS",
    description: "etcd client URLs, comma-separated.",
    default: "required with `--datastore etcd`",
    whereabouts: "—",
    bad: ["--datastore", "etcd"],
  },
  "etcd-username": { value: "NAME", description: "etcd user.", default: "none", whereabouts: "—", bad: ["--etcd-username", "ipam"] },
  "etcd-password-file": {
    value: "PATH",
    description: "File holding the etcd password.",
    default: "none",
    whereabouts: "—",
    bad: ["--etcd-password-file", "/etc/pw"],
  },
  "etcd-ca-file": { value: "PATH", description: "etcd TLS CA.", default: "none", whereabouts: "—", bad: ["--etcd-ca-file", "/etc/ca.pem"] },
  "etcd-cert-file": {
    value: "PATH",
    description: "etcd TLS client certificate.",
    default: "none",
    whereabouts: "—",
    bad: ["--etcd-cert-file", "/etc/c.pem"],
  },
  "etcd-key-file": {
    value: "PATH",
    description: "etcd TLS client key.",
    default: "none",
    whereabouts: "—",
    bad: ["--etcd-key-file", "/etc/k.pem"],
  },
  "data-dir": {
    value: "DIR",
    description: "File store directory.",
    default: "required with `--datastore file`",
    whereabouts: "—",
    bad: ["--datastore", "file"],
  },
  once: {
    description: "One full reconcile, then exit 0 (all went well) or 1.",
    default: "off",
    whereabouts: "the old ip-reconciler CronJob",
    bad: ["--once", "--watch"],
  },
  schedule: {
    value: "CRON",
    description: "Full reconcile on this cron schedule, UTC.",
    default: "`30 4 * * *`",
    whereabouts: "`reconciler_cron_expression`, `WHEREABOUTS_RECONCILER_CRON`",
    bad: ["--schedule", "every night"],
  },
  "schedule-file": {
    value: "PATH",
    description: "Read the schedule from this file, re-read when it changes; wins over `--schedule`.",
    default: "none",
    whereabouts: "`/cron-schedule/config` (ConfigMap `whereabouts-config`)",
    bad: ["--once", "--schedule-file", "/cron-schedule/config"],
  },
  watch: {
    description: "Pod-deletion controller (watch, plus a full pass every `--resync`).",
    default: "off",
    whereabouts: "ip-control-loop",
    bad: ["--watch", "--schedule", "30 4 * * *"],
  },
  resync: {
    value: "DURATION",
    description: "Full reconcile period with `--watch`.",
    default: "`10m`",
    whereabouts: "—",
    bad: ["--watch", "--resync", "0"],
  },
  "dry-run": { description: "Report what would be released or repaired, and why; change nothing.", default: "off", whereabouts: "—" },
  grace: {
    value: "DURATION",
    description: "Never release a reservation younger than this.",
    default: "`5m`",
    whereabouts: "—",
    bad: ["--grace", "5 minutes"],
  },
  "overlapping-ranges": {
    value: "BOOL",
    description: "Delete and audit overlapping-range claims with reservations.",
    default: "`true`",
    whereabouts: "`enable_overlapping_ranges`",
    bad: ["--overlapping-ranges", "yes"],
  },
  "claim-settle": {
    value: "DURATION",
    description: "Re-read an audit finding this long after, repair it only if unchanged.",
    default: "`5s`",
    whereabouts: "—",
    bad: ["--claim-settle", "x"],
  },
  "node-slices": {
    value: "BOOL",
    description:
      "After each scheduled or `--once` pass (not `--watch`), give every node without one a slice of each NodeSlicePool and free deleted nodes' idle slices (their IPPool empty): Whereabouts' node-slice controller's work, for when it is gone. Kubernetes store; every write is conditional. RBAC: `packages/storage-kubernetes/manifests/rbac-reconciler-node-slices.yaml` (chart: `reconciler.nodeSlices`).",
    default: "`false`",
    whereabouts: "its node-slice controller",
    bad: ["--node-slices", "yes"],
  },
  "leader-election": {
    value: "BOOL",
    description: "Lease-based leader election (`--once` never elects).",
    default: "`true`",
    whereabouts: "— (one replica only)",
    bad: ["--leader-election", "on"],
  },
  "lease-name": { value: "NAME", description: "The leader Lease.", default: "`ipamkit-reconciler`", whereabouts: "—" },
  "lease-namespace": { value: "NS", description: "The leader Lease's namespace.", default: "the pool namespace", whereabouts: "—" },
  identity: { value: "ID", description: "Leader-election identity.", default: "`POD_NAME`, else the host name", whereabouts: "—" },
  "log-level": { value: "LEVEL", description: "pino level.", default: "`info`", whereabouts: "`log_level`", bad: ["--log-level", "loud"] },
  "metrics-address": {
    value: "HOST:PORT",
    description: "Serve Prometheus `/metrics` and `/healthz` there (not with `--once`).",
    default: "off",
    whereabouts: "—",
    bad: ["--metrics-address", "9100"],
  },
};

const pools = ["pools"];

/** packages/cli `ipamkit`: per long flag; commander supplies the description and default. */
export const CLI_FLAGS: Record<string, FlagDoc> = {
  config: { whereabouts: "the NAD / flat file", bad: [...pools, "--config", "/nonexistent/net.conf"] },
  kubeconfig: { whereabouts: "`kubernetes.kubeconfig`", bad: [...pools, "--kubeconfig", "/nonexistent/kubeconfig"] },
  namespace: { whereabouts: "`WHEREABOUTS_NAMESPACE`" },
  "etcd-endpoints": { whereabouts: "`etcd_host`", bad: [...pools, "--etcd-endpoints", "http://127.0.0.1:2379", "--data-dir", "/tmp/ipam"] },
  "etcd-username": { whereabouts: "`etcd_username`", bad: [...pools, "--etcd-username", "ipam"] },
  "etcd-password-file": { whereabouts: "`etcd_password`", bad: [...pools, "--etcd-password-file", "/etc/pw"] },
  "etcd-ca-file": { whereabouts: "`etcd_ca_cert_file`", bad: [...pools, "--etcd-ca-file", "/etc/ca.pem"] },
  "etcd-cert-file": { whereabouts: "`etcd_cert_file`", bad: [...pools, "--etcd-cert-file", "/etc/c.pem"] },
  "etcd-key-file": { whereabouts: "`etcd_key_file`", bad: [...pools, "--etcd-key-file", "/etc/k.pem"] },
  "data-dir": { whereabouts: "`data_dir`", bad: [...pools, "--config", "/etc/cni/net.d/10-net.conf", "--data-dir", "/tmp/ipam"] },
  network: { whereabouts: "`network_name`" },
  json: { whereabouts: "—" },
  progress: { whereabouts: "—" },
  grace: { whereabouts: "the reconciler's `--grace`", bad: ["audit", "--grace", "soon"] },
  settle: { whereabouts: "—", bad: ["audit", "--settle", "x"] },
  "flat-file": {
    whereabouts: "the nodes' `whereabouts.conf`",
    bad: ["preflight", "--kubeconfig", "/dev/null", "--flat-file", "/nonexistent/whereabouts.conf"],
  },
  "no-claims": { whereabouts: "`enable_overlapping_ranges: false`" },
  "no-pods": { whereabouts: "—" },
  "allow-legacy": { whereabouts: "—" },
  key: { whereabouts: "the IPPool entry's `id`/`ifname`", bad: ["release", "--data-dir", "$EMPTY_DIR", "--key", "no-slash"] },
  ip: { whereabouts: "the IPPool entry's offset", bad: ["release", "--data-dir", "$EMPTY_DIR", "--ip", "10.0.0.300"] },
  pool: { whereabouts: "the IPPool", bad: ["release", "--data-dir", "$EMPTY_DIR", "--ip", "10.0.0.5", "--pool", "10.0.0.0"] },
  "dry-run": { whereabouts: "—" },
};
