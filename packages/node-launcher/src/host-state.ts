import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * What a node (kubelet, containerd, its shims and the CNI chain) changes on the host, as far as a
 * test can see it: {@link snapshotHost} reads it, {@link restoreHost} puts back what a snapshot
 * taken before the node started says.
 */
export interface HostState {
  /** sysctl name → value (kubelet sets the first five; bridge with isGateway sets ip_forward) */
  readonly sysctls: Record<string, string>;
  /** `iptables-save`/`ip6tables-save` rules and chains of KUBE-*, CNI-* (counters stripped), per table */
  readonly iptables: readonly string[];
  /** cgroup dirs named kubepods* (one node) or ipamkit-node-* (a cluster node's cgroup root) at the top of each hierarchy */
  readonly cgroups: readonly string[];
  /** mount points under the node's dir, /run/containerd, /var/lib/kubelet and /run/netns/cni-* */
  readonly mounts: readonly string[];
  /** /run/netns/cni-* (the sandboxes' network namespaces) */
  readonly netns: readonly string[];
  /** host paths the node creates, and whether each exists */
  readonly paths: Record<string, boolean>;
  /** network interfaces among `links` (the node's bridge) that exist */
  readonly links: readonly string[];
}

export const NODE_SYSCTLS = [
  "vm.overcommit_memory",
  "vm.panic_on_oom",
  "kernel.panic",
  "kernel.panic_on_oops",
  "kernel.keys.root_maxkeys",
  "kernel.keys.root_maxbytes",
  "net.ipv4.ip_forward",
];
/** Paths the node creates on the host outside its own dir (containerd's shims, kubelet, libcni's cache, the DEL journal). */
export const NODE_HOST_PATHS = [
  "/var/lib/kubelet",
  "/run/containerd",
  "/var/log/containers",
  "/var/log/pods",
  "/var/lib/cni",
  "/var/lib/ipamkit",
];
/**
 * The mount points a cluster node's private mount namespace needs on the host (empty folders; each
 * node binds its own over them): removed again when they did not exist before. /run/netns is left
 * in place: other tests' `ip netns` use it.
 */
export const CLUSTER_HOST_PATHS = ["/etc/cni", "/opt/cni", "/var/lib/containerd", "/run/ipamkit"];
/** The top-level cgroup of a cluster node (kubelet's cgroupRoot): `ipamkit-node-<name>`. */
export const NODE_CGROUP_PREFIX = "ipamkit-node-";
const CHAIN = /^(KUBE-|CNI-)/;
const CGROUP_ROOT = "/sys/fs/cgroup";

function run(command: string, args: readonly string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(command, args, { encoding: "utf8" });
  return { status: r.status ?? -1, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

const sysctlPath = (name: string) => join("/proc/sys", ...name.split("."));

function readSysctls(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of NODE_SYSCTLS) {
    try {
      out[name] = readFileSync(sysctlPath(name), "utf8").trim();
    } catch {
      // not on this kernel
    }
  }
  return out;
}

/** The node's rules and chains in `<tool> <table> <line>` form, counters dropped. */
function readIptables(): string[] {
  const lines: string[] = [];
  for (const tool of ["iptables", "ip6tables"]) {
    const saved = run(`${tool}-save`, []);
    if (saved.status !== 0) continue;
    let table = "";
    for (const raw of saved.stdout.split("\n")) {
      const line = raw.replace(/\s*\[\d+:\d+\]$/, "");
      if (line.startsWith("*")) table = line.slice(1);
      else if (line.startsWith(":") && CHAIN.test(line.slice(1))) lines.push(`${tool} ${table} ${line}`);
      else if (line.startsWith("-A ") && / (-A|-j|-g) (KUBE-|CNI-)/.test(` ${line}`)) lines.push(`${tool} ${table} ${line}`);
    }
  }
  return lines.sort();
}

function hierarchies(): string[] {
  try {
    return readdirSync(CGROUP_ROOT)
      .map((name) => join(CGROUP_ROOT, name))
      .filter((dir) => statSync(dir).isDirectory());
  } catch {
    return [];
  }
}

function readCgroups(): string[] {
  return hierarchies()
    .flatMap((dir) =>
      readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory() && (e.name.startsWith("kubepods") || e.name.startsWith(NODE_CGROUP_PREFIX)))
        .map((e) => join(dir, e.name)),
    )
    .sort();
}

/** Mount points (mountinfo field 5, octal escapes decoded) the node may have made. */
function readMounts(nodeDir: string | undefined): string[] {
  const points = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => (line.split(" ")[4] ?? "").replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8))));
  const ours = (p: string) =>
    (nodeDir !== undefined && p.startsWith(`${nodeDir}/`)) ||
    p.startsWith("/run/containerd") ||
    p.startsWith("/var/lib/kubelet") ||
    /^\/(var\/)?run\/netns\/cni-/.test(p);
  return points.filter(ours).sort();
}

function readNetns(): string[] {
  try {
    return readdirSync("/run/netns")
      .filter((n) => n.startsWith("cni-"))
      .sort();
  } catch {
    return [];
  }
}

/** Reads the host state a node changes; `nodeDir` adds the mounts under the node's own dir. */
export function snapshotHost(options: { nodeDir?: string; links?: readonly string[] } = {}): HostState {
  const paths: Record<string, boolean> = {};
  for (const p of [...NODE_HOST_PATHS, ...CLUSTER_HOST_PATHS]) paths[p] = existsSync(p);
  return {
    sysctls: readSysctls(),
    iptables: readIptables(),
    cgroups: readCgroups(),
    mounts: readMounts(options.nodeDir),
    netns: readNetns(),
    paths,
    links: (options.links ?? []).filter((name) => existsSync(join("/sys/class/net", name))),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * SIGKILLs every process in the kubepods cgroups (the pods' sandboxes and containers): a power-off.
 * With `root` (a cluster node's cgroup root, e.g. `ipamkit-node-a`), only that node's.
 */
export function killKubepods(root?: string): void {
  const kill = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) kill(join(d, e.name));
    const procs = existsSync(join(d, "cgroup.procs")) ? readFileSync(join(d, "cgroup.procs"), "utf8") : "";
    for (const pid of procs.split("\n").filter(Boolean)) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // gone already
      }
    }
  };
  for (const dir of readCgroups()) if (root === undefined || dir.endsWith(`/${root}`)) kill(dir);
}

/**
 * Creates a cluster node's cgroup root (`name` at the top of every hierarchy; cpuset's CPUs and
 * memory nodes copied from the top, which a new v1 cpuset cgroup does not inherit): kubelet's
 * cgroupRoot must exist before it starts.
 */
export function makeCgroupRoot(name: string): void {
  for (const hierarchy of hierarchies()) {
    const dir = join(hierarchy, name);
    if (!existsSync(dir)) mkdirSync(dir);
    for (const file of ["cpuset.cpus", "cpuset.mems"]) {
      const top = join(hierarchy, file);
      if (existsSync(top) && readFileSync(join(dir, file), "utf8").trim() === "") writeFileSync(join(dir, file), readFileSync(top, "utf8"));
    }
  }
}

/** Kills every process in a cgroup tree, then removes its dirs depth-first (retried while they empty). */
async function removeCgroup(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const dirs: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(join(d, e.name));
      dirs.push(d);
    };
    if (!existsSync(dir)) return;
    walk(dir);
    for (const d of dirs) {
      for (const pid of (existsSync(join(d, "cgroup.procs")) ? readFileSync(join(d, "cgroup.procs"), "utf8") : "")
        .split("\n")
        .filter(Boolean)) {
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {
          // gone already
        }
      }
    }
    try {
      for (const d of dirs) rmdirSync(d);
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new Error(`[node-launcher] cannot remove cgroup ${dir}: processes keep it busy`);
}

function restoreIptables(before: readonly string[]): void {
  const had = new Set(before);
  const now = readIptables().filter((l) => !had.has(l));
  // rules first (a chain is deleted only once nothing jumps to it), then the chains
  for (const line of now) {
    const [tool = "", table = "", ...rest] = line.split(" ");
    if (rest[0] === "-A") run(tool, ["-w", "-t", table, "-D", ...rest.slice(1)]);
  }
  for (const line of now) {
    const [tool = "", table = "", chain = ""] = line.split(" ");
    if (!chain.startsWith(":")) continue;
    const name = chain.slice(1);
    run(tool, ["-w", "-t", table, "-F", name]);
    run(tool, ["-w", "-t", table, "-X", name]);
  }
}

/**
 * Puts back what `before` says: kills what is left in new kubepods cgroups and removes them,
 * unmounts new mounts (lazily, deepest first), removes new /run/netns/cni-* files, deletes new
 * KUBE- and CNI- rules and chains, writes changed sysctls back, removes host paths that did not exist
 * and deletes the node's links. Call it after the node's processes are stopped.
 */
export async function restoreHost(before: HostState, options: { nodeDir?: string; links?: readonly string[] } = {}): Promise<void> {
  for (const dir of readCgroups().filter((d) => !before.cgroups.includes(d))) await removeCgroup(dir);
  const mounts = readMounts(options.nodeDir).filter((m) => !before.mounts.includes(m));
  for (const point of mounts.sort((a, b) => b.length - a.length)) run("umount", ["-l", point]);
  for (const name of readNetns().filter((n) => !before.netns.includes(n))) rmSync(join("/run/netns", name), { force: true });
  restoreIptables(before.iptables);
  const now = readSysctls();
  for (const [name, value] of Object.entries(before.sysctls)) if (now[name] !== value) writeFileSync(sysctlPath(name), value);
  for (const [path, existed] of Object.entries(before.paths)) if (!existed) rmSync(path, { recursive: true, force: true });
  for (const name of options.links ?? [])
    if (!before.links.includes(name) && existsSync(join("/sys/class/net", name))) run("ip", ["link", "del", name]);
}
