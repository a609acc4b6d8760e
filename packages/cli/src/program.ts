import { readFileSync } from "node:fs";
import { formatIp, type IpamStore, ipAt, type PoolRef, parseCidr, poolId } from "@ipamkit/core";
import type { PodSource } from "@ipamkit/reconciler";
import { type Command, Option } from "commander";
import { audit } from "./audit.js";
import { CliError, EXIT } from "./errors.js";
import { type Progress, readInventory } from "./inventory.js";
import { type OpenedStore, openStore } from "./open-store.js";
import { preflight, preflightText } from "./preflight.js";
import { release } from "./release.js";
import { resolveStoreSpec, type StoreFlags, type StoreSpec } from "./store-spec.js";
import { auditText, poolJson, poolsTable, releaseText, showJson, showTable } from "./views.js";

interface OutputFlags {
  json?: boolean;
  progress?: boolean;
}

/** What a command needs from its process: output and the exit code it ends with. */
export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  exit: (code: number) => void;
  stderrIsTty: boolean;
}

/** The store options of every command, as the plugin takes them. */
function storeOptions(command: Command): Command {
  return command
    .option("--config <file>", "a NetworkAttachmentDefinition, CNI network config (JSON) or Whereabouts flat file: the store it names")
    .option("--kubeconfig <path>", "the Kubernetes store (IPPool objects); with another store, where the audit reads pods")
    .option("--namespace <ns>", "pool namespace (Kubernetes; default: the kubeconfig context's, else kube-system)")
    .option("--etcd-endpoints <urls>", "the etcd store: comma-separated client URLs")
    .option("--etcd-username <name>", "etcd user")
    .option("--etcd-password-file <path>", "file holding the etcd password (never the password on a command line)")
    .option("--etcd-ca-file <path>", "etcd TLS: CA certificate")
    .option("--etcd-cert-file <path>", "etcd TLS: client certificate")
    .option("--etcd-key-file <path>", "etcd TLS: client key")
    .addOption(new Option("--etcd-prefix <prefix>", "etcd key prefix").default(undefined).hideHelp())
    .option("--data-dir <dir>", "the file store directory")
    .option("--network <name>", 'only this network (network_name; "" the unnamed one); default: the config\'s, else every network')
    .option("--json", "JSON on stdout, for scripts")
    .option("--progress", "progress lines on stderr (default: when stderr is a terminal)");
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

function duration(flag: string): (text: string) => number {
  return (text) => {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
    if (match === null) throw new CliError(`${flag}: ${JSON.stringify(text)} is not a duration (e.g. 2s, 5m)`);
    return Math.round(Number(match[1]) * (UNITS[match[2] ?? "s"] ?? 1000));
  };
}

async function withStore<T>(
  flags: StoreFlags & OutputFlags,
  io: Io,
  run: (opened: OpenedStore, spec: StoreSpec, progress: Progress) => Promise<T>,
): Promise<T> {
  const spec = resolveStoreSpec(flags);
  const show = flags.progress === true || io.stderrIsTty;
  const progress: Progress = show ? (m) => io.err(`… ${m}`) : () => {};
  const opened = await openStore(spec);
  try {
    return await run(opened, spec, progress);
  } finally {
    await opened.store.close();
  }
}

const addressIn = (cidr: string) => {
  const parsed = parseCidr(cidr);
  return (offset: bigint) => formatIp(ipAt(parsed, offset));
};

async function findPool(store: IpamStore, spec: StoreSpec, name: string) {
  const parts = name.split("/");
  const network = parts.length > 2 ? parts.slice(0, -2).join("/") : undefined;
  let cidr: string;
  try {
    cidr = parseCidr(parts.slice(-2).join("/")).text;
  } catch {
    throw new CliError(`${JSON.stringify(name)} is not a pool: give its CIDR or network/CIDR (see ipamkit pools)`);
  }
  const matches = (await store.listPools()).filter(
    (r) =>
      r.cidr === cidr && (network === undefined || r.network === network) && (spec.network === undefined || r.network === spec.network),
  );
  if (matches.length === 0)
    throw new CliError(
      `no pool ${name}${spec.network === undefined ? "" : ` in network ${JSON.stringify(spec.network)}`} (see ipamkit pools)`,
    );
  if (matches.length > 1)
    throw new CliError(`${name} is a pool in ${matches.length} networks (${matches.map(poolId).join(", ")}): name one as network/CIDR`);
  return matches[0] as PoolRef;
}

/** The commands on a commander program. */
export function addCommands(program: Command, io: Io): void {
  addPoolsCommand(program, io);
  addShowCommand(program, io);
  addAuditCommand(program, io);
  addReleaseCommand(program, io);
  addPreflightCommand(program, io);
}

/** `ipamkit preflight`: can Whereabouts' binary be swapped for ipamkit's on this cluster? Exit 0 only when safe. */
function addPreflightCommand(program: Command, io: Io): void {
  program
    .command("preflight")
    .description(
      "before replacing Whereabouts: every NAD's IPAM config (accepted / with warnings / refused, with the fix) and every IPPool, ORIP and NodeSlicePool (what ipamkit refuses or repairs); exit 0 only when the swap is safe",
    )
    .option("--kubeconfig <path>", "the cluster (default: KUBECONFIG, then ~/.kube/config)")
    .option("--namespace <ns>", "Whereabouts' pool namespace (default: the kubeconfig context's, else kube-system)")
    .option("--flat-file <path>", "the nodes' whereabouts.conf, read as each node reads it beside every NAD")
    .addOption(
      new Option("--settle <duration>", "read pool findings again after this long; only those still there count")
        .default(2_000, "2s")
        .argParser(duration("--settle")),
    )
    .option("--json", "JSON on stdout, for scripts")
    .option("--progress", "progress lines on stderr (default: when stderr is a terminal)")
    .action(async (flags: { kubeconfig?: string; namespace?: string; flatFile?: string; settle: number } & OutputFlags) => {
      const flat = flags.flatFile === undefined ? undefined : readFlatFile(flags.flatFile);
      if (flags.kubeconfig === undefined && process.env.KUBECONFIG === undefined) {
        throw new CliError("preflight reads the cluster: give --kubeconfig PATH (or set KUBECONFIG)");
      }
      const storeFlags = {
        ...(flags.kubeconfig === undefined ? {} : { kubeconfig: flags.kubeconfig }),
        ...(flags.namespace === undefined ? {} : { namespace: flags.namespace }),
      };
      await withStore(
        {
          ...storeFlags,
          ...(flags.json === undefined ? {} : { json: flags.json }),
          ...(flags.progress === undefined ? {} : { progress: flags.progress }),
        },
        io,
        async ({ store, kubeConfig }, spec, progress) => {
          if (kubeConfig === undefined) throw new CliError("preflight needs a Kubernetes cluster (--kubeconfig)");
          const { resolveNamespace } = await import("@ipamkit/storage-kubernetes");
          const namespace = resolveNamespace(kubeConfig, spec.namespace);
          const report = await preflight({ kubeConfig, namespace, store, spec, flat, settleMs: flags.settle, progress });
          io.out(flags.json === true ? JSON.stringify(report, null, 2) : preflightText(report));
          io.exit(report.safe ? EXIT.ok : EXIT.findings);
        },
      );
    });
}

function readFlatFile(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new CliError(`cannot read --flat-file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** `ipamkit pools`: every pool with its usage. */
function addPoolsCommand(program: Command, io: Io): void {
  storeOptions(program.command("pools").description("every pool: range, network, used / capacity / percent, per-node blocks")).action(
    async (flags: StoreFlags & OutputFlags) => {
      await withStore(flags, io, async ({ store }, spec, progress) => {
        const { pools } = await readInventory(store, spec, progress);
        io.out(flags.json === true ? JSON.stringify({ pools: pools.map(poolJson) }, null, 2) : poolsTable(pools));
      });
    },
  );
}

/** `ipamkit show <pool>`: one pool's reservations. */
function addShowCommand(program: Command, io: Io): void {
  storeOptions(
    program
      .command("show")
      .description("one pool's reservations: address, key, pod, age")
      .argument("<pool>", "the pool: its CIDR, or network/CIDR as `ipamkit pools` shows it"),
  ).action(async (name: string, flags: StoreFlags & OutputFlags) => {
    await withStore(flags, io, async ({ store }, spec) => {
      const ref = await findPool(store, spec, name);
      const stored = await store.readPool(ref);
      if (stored === undefined) throw new CliError(`pool ${poolId(ref)} is gone`);
      const at = addressIn(ref.cidr);
      io.out(flags.json === true ? JSON.stringify(showJson(ref, stored, at), null, 2) : showTable(ref, stored, at, new Date()));
    });
  });
}

/** `ipamkit audit`: the store's findings; exit 1 on a finding. */
function addAuditCommand(program: Command, io: Io): void {
  storeOptions(
    program
      .command("audit")
      .description(
        "double holds, claims without entries and entries without claims, reservations of gone pods, legacy entries; exit 1 on a finding",
      )
      .addOption(
        new Option("--grace <duration>", "entries younger than this are not judged (as the reconciler's --grace)")
          .default(300_000, "5m")
          .argParser(duration("--grace")),
      )
      .addOption(
        new Option("--settle <duration>", "read findings again after this long; only those still there count")
          .default(2_000, "2s")
          .argParser(duration("--settle")),
      )
      .option("--no-claims", "skip the overlapping-range claim checks (networks with enable_overlapping_ranges false)")
      .option("--no-pods", "skip the pod checks (e.g. a kubeconfig that may not list pods)")
      .option("--allow-legacy", "report legacy Whereabouts entries without failing on them"),
  ).action(
    async (flags: StoreFlags & OutputFlags & { grace: number; settle: number; claims: boolean; pods: boolean; allowLegacy?: boolean }) => {
      await withStore(flags, io, async ({ store, kubeConfig }, spec, progress) => {
        let pods: PodSource["list"] | undefined;
        let close = () => {};
        if (kubeConfig !== undefined && flags.pods) {
          const { createKubernetesPodSource } = await import("@ipamkit/storage-kubernetes");
          const source = createKubernetesPodSource({ kubeConfig });
          pods = () => source.list();
          close = () => source.close();
        }
        try {
          const report = await audit({
            store,
            spec,
            ...(pods === undefined ? {} : { pods }),
            claims: flags.claims && spec.overlappingRanges !== false,
            graceMs: flags.grace,
            settleMs: flags.settle,
            now: () => new Date(),
            progress,
          });
          const failing = report.findings.filter((f) => !(flags.allowLegacy === true && f.kind === "legacy-entry")).length;
          const skipped = kubeConfig === undefined ? "no kubeconfig" : "--no-pods";
          io.out(flags.json === true ? JSON.stringify({ ...report, failing }, null, 2) : auditText(report, failing, skipped));
          io.exit(failing === 0 ? EXIT.ok : EXIT.findings);
        } finally {
          close();
        }
      });
    },
  );
}

/** `ipamkit release`: one attachment, only if still exactly as read. */
function addReleaseCommand(program: Command, io: Io): void {
  storeOptions(
    program
      .command("release")
      .description(
        "release one attachment, only if it is still exactly as read (its claim with it); a sticky one still held is kept first; exit 1 when nothing was released",
      )
      .option("--key <containerID/ifName>", "the attachment key (exact)")
      .option("--ip <address>", "the address (its holder, as read)")
      .option("--pool <cidr>", "only this pool")
      .option("--dry-run", "print what would be released; change nothing"),
  ).action(async (flags: StoreFlags & OutputFlags & { key?: string; ip?: string; pool?: string; dryRun?: boolean }) => {
    await withStore(flags, io, async ({ store }, spec, progress) => {
      const dryRun = flags.dryRun === true;
      const results = await release(
        store,
        spec,
        {
          ...(flags.key === undefined ? {} : { key: flags.key }),
          ...(flags.ip === undefined ? {} : { ip: flags.ip }),
          ...(flags.pool === undefined ? {} : { pool: flags.pool }),
          dryRun,
        },
        progress,
      );
      io.out(flags.json === true ? JSON.stringify({ dryRun, results }, null, 2) : releaseText(results, dryRun));
      const ok = dryRun ? ["would-release", "would-keep"] : ["released", "kept"];
      const done = results.length > 0 && results.every((r) => ok.includes(r.outcome));
      io.exit(done ? EXIT.ok : EXIT.findings);
    });
  });
}
