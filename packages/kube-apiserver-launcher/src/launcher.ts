import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type EtcdInstance, freePort, PORT_ATTEMPTS, startEtcd } from "@ipamkit/etcd-launcher";
import { ApiextensionsV1Api, CoreV1Api, KubeConfig, loadAllYaml, type V1CustomResourceDefinition } from "@kubernetes/client-node";
import { type Binaries, findBinaries } from "./binaries.js";
import { makeServingCertificates, type ServingCertificates } from "./certs.js";

/** The project's Whereabouts CRDs (IPPool, OverlappingRangeIPReservation, NodeSlicePool). */
export const PROJECT_CRDS = fileURLToPath(new URL("../../storage-kubernetes/manifests/crds.yaml", import.meta.url));
/** The static bearer token of the test user (`ipamkit-admin`, group `system:masters`). */
export const TEST_TOKEN = "ipamkit-test-token";

export interface KubeApiserverOptions {
  /** CRD manifest files to install and wait for (Established and served). Default: {@link PROJECT_CRDS}. */
  crds?: readonly string[];
  /** Namespaces to create once the server is ready (the real server has only default, kube-system, kube-public, kube-node-lease). */
  namespaces?: readonly string[];
  /** The kubeconfig context's namespace. */
  namespace?: string;
  /**
   * Keep the ServiceAccount admission plugin on (default off): pods then get their ServiceAccount's
   * token projected by the kubelet, as on a cluster. Needs a kube-controller-manager running the
   * serviceaccount and root-ca-certificate-publisher controllers, or no pod can be created.
   */
  serviceAccountAdmission?: boolean;
  /** Extra kube-apiserver flags (they come last, so they override the launcher's). */
  args?: readonly string[];
  /** How long start may take, build excluded. Default 90 s. */
  timeoutMs?: number;
  /**
   * Picks the secure port (default etcd-launcher's `freePort`). A port found free can be taken
   * before kube-apiserver binds it (tests run in parallel): kube-apiserver then exits with
   * "address already in use" and is started again on a fresh port, up to `PORT_ATTEMPTS` times.
   */
  pickPort?: () => Promise<number>;
}

/** A real kube-apiserver on a real etcd, both on 127.0.0.1, both stopped by `stop()`. */
export interface KubeApiserver {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  /** Kubernetes version (`v1.37.2`) and etcd version (`v3.7.0`) as built. */
  readonly versions: { readonly kubernetes: string; readonly etcd: string };
  readonly token: string;
  /** PEM of the CA that signed the serving certificate. */
  readonly ca: string;
  /** A kubeconfig file (mode 0600) for the test user, CA inline, in the temporary dir. */
  readonly kubeconfigPath: string;
  /** The same kubeconfig loaded for `@kubernetes/client-node`. */
  readonly kubeConfig: KubeConfig;
  readonly etcd: EtcdInstance;
  /** Milliseconds from spawn until ready with its CRDs served. */
  readonly startMs: number;
  /** The last lines kube-apiserver logged (for a failing test's message). */
  logTail(): string;
  /** Stops kube-apiserver (SIGTERM, SIGKILL after 10 s) and etcd, removes the temporary dir. */
  stop(): Promise<void>;
}

const children = new Set<ChildProcess>();
let exitHookInstalled = false;
/** A test process that exits without stop() must not leave a kube-apiserver behind. */
function killOnExit(child: ChildProcess): void {
  children.add(child);
  child.once("exit", () => children.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const c of children) c.kill("SIGKILL");
  });
}

/** GET `path` with the token; resolves with the status code (0 when the connection fails). */
function get(url: string, path: string, ca: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request(`${url}${path}`, { ca, headers: { authorization: `Bearer ${token}` }, timeout: 5_000 }, (res) => {
      let body = "";
      res.on("data", (d) => {
        body += String(d);
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve({ status: 0, body: "" }));
    req.end();
  });
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, deadline: number, check: () => Promise<boolean>, failed: () => string | undefined): Promise<void> {
  for (;;) {
    const why = failed();
    if (why !== undefined) throw new Error(`[kube-apiserver-launcher] ${why}`);
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`[kube-apiserver-launcher] timed out waiting for ${what}`);
    await pause(100);
  }
}

function kubeconfigText(url: string, ca: string, token: string, namespace: string | undefined): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "ipamkit-test", cluster: { server: url, "certificate-authority-data": Buffer.from(ca).toString("base64") } }],
    users: [{ name: "ipamkit-admin", user: { token } }],
    contexts: [{ name: "ipamkit-test", context: { cluster: "ipamkit-test", user: "ipamkit-admin", ...(namespace ? { namespace } : {}) } }],
    "current-context": "ipamkit-test",
  });
}

async function installCrds(
  kubeConfig: KubeConfig,
  files: readonly string[],
  url: string,
  ca: string,
  deadline: number,
  failed: () => string | undefined,
) {
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  const crds = files.flatMap((file) => loadAllYaml(readFileSync(file, "utf8")) as V1CustomResourceDefinition[]);
  for (const crd of crds) await api.createCustomResourceDefinition({ body: crd });
  for (const crd of crds) {
    const name = crd.metadata?.name ?? "";
    await until(
      `CRD ${name} to be Established`,
      deadline,
      async () => {
        const current = await api.readCustomResourceDefinition({ name });
        return current.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") === true;
      },
      failed,
    );
    // Established comes a moment before the resource is served: wait until a LIST answers 200.
    const version = crd.spec.versions.find((v) => v.served)?.name ?? "";
    const path = `/apis/${crd.spec.group}/${version}/${crd.spec.names.plural}?limit=1`;
    await until(`${path} to be served`, deadline, async () => (await get(url, path, ca, TEST_TOKEN)).status === 200, failed);
  }
}

/** One launch's state: its temporary dir and log, its deadline, and what it has started so far. */
interface LaunchContext {
  readonly binaries: Binaries;
  readonly options: KubeApiserverOptions;
  readonly dir: string;
  readonly logFile: string;
  readonly deadline: number;
  etcd: EtcdInstance | undefined;
  child: ChildProcess | undefined;
}

function logTail(ctx: LaunchContext): string {
  try {
    return readFileSync(ctx.logFile, "utf8").split("\n").slice(-30).join("\n");
  } catch {
    return "";
  }
}

async function stopLaunch(ctx: LaunchContext): Promise<void> {
  const c = ctx.child;
  if (c !== undefined && c.exitCode === null && c.signalCode === null) {
    await new Promise<void>((resolve) => {
      const kill = setTimeout(() => c.kill("SIGKILL"), 10_000);
      c.once("exit", () => {
        clearTimeout(kill);
        resolve();
      });
      c.kill("SIGTERM");
    });
  }
  await ctx.etcd?.stop();
  rmSync(ctx.dir, { recursive: true, force: true });
}

function apiserverFlags(ctx: LaunchContext, etcd: EtcdInstance, certs: ServingCertificates, tokens: string, port: number): string[] {
  return [
    `--etcd-servers=${etcd.endpoint}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    `--secure-port=${port}`,
    `--tls-cert-file=${certs.cert}`,
    `--tls-private-key-file=${certs.key}`,
    `--cert-dir=${join(ctx.dir, "certs")}`,
    `--token-auth-file=${tokens}`,
    "--authorization-mode=RBAC",
    `--service-account-key-file=${certs.serviceAccountPub}`,
    `--service-account-signing-key-file=${certs.serviceAccountKey}`,
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    "--service-cluster-ip-range=10.0.0.0/24",
    // the advertise address is loopback: no endpoints for the kubernetes Service
    "--endpoint-reconciler-type=none",
    // without a controller-manager nothing creates the default ServiceAccount: pods could not be created
    ...(ctx.options.serviceAccountAdmission ? [] : ["--disable-admission-plugins=ServiceAccount"]),
    "--profiling=false",
    ...(ctx.options.args ?? []),
  ];
}

/** Spawns kube-apiserver until one binds its port and answers /readyz (a port taken meanwhile: a fresh one, up to PORT_ATTEMPTS). */
async function spawnUntilReady(
  ctx: LaunchContext,
  flags: (port: number) => string[],
  ca: string,
): Promise<{ url: string; failed: () => string | undefined }> {
  const pickPort = ctx.options.pickPort ?? freePort;
  for (let attempt = 1; ; attempt++) {
    const port = await pickPort();
    const url = `https://127.0.0.1:${port}`;
    // each attempt logs afresh, so that logTail() and the bind check read this attempt's lines
    const log = openSync(ctx.logFile, "w");
    const spawned = spawn(ctx.binaries.kubeApiserver, flags(port), { stdio: ["ignore", log, log] });
    closeSync(log);
    ctx.child = spawned;
    killOnExit(spawned);
    const failed = () =>
      spawned.exitCode !== null || spawned.signalCode !== null
        ? `kube-apiserver exited (${spawned.exitCode ?? spawned.signalCode}):\n${logTail(ctx)}`
        : undefined;
    try {
      await until("/readyz", ctx.deadline, async () => (await get(url, "/readyz", ca, TEST_TOKEN)).status === 200, failed);
      return { url, failed };
    } catch (error) {
      if (attempt >= PORT_ATTEMPTS || !String(error).includes("address already in use")) throw error;
    }
  }
}

/**
 * Starts etcd and kube-apiserver (the binaries test-infra/kube-apiserver/build.sh cached; an error
 * names the script when they are missing) on free loopback ports with a temporary data dir, a
 * throw-away CA and a static token, installs the CRDs and creates the namespaces asked for.
 */
export async function startKubeApiserver(options: KubeApiserverOptions = {}): Promise<KubeApiserver> {
  const binaries: Binaries = findBinaries();
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), "ipamkit-kube-apiserver-"));
  const ctx: LaunchContext = {
    binaries,
    options,
    dir,
    logFile: join(dir, "kube-apiserver.log"),
    deadline: started + (options.timeoutMs ?? 90_000),
    etcd: undefined,
    child: undefined,
  };
  const stop = () => stopLaunch(ctx);
  try {
    const certs = makeServingCertificates(dir);
    const ca = readFileSync(certs.ca, "utf8");
    const tokens = join(dir, "tokens.csv");
    writeFileSync(tokens, `${TEST_TOKEN},ipamkit-admin,ipamkit-admin-uid,"system:masters"\n`, { mode: 0o600 });
    const running = await startEtcd({ binary: binaries.etcd, timeoutMs: Math.max(1_000, ctx.deadline - Date.now()) });
    ctx.etcd = running;
    const { url, failed } = await spawnUntilReady(ctx, (port) => apiserverFlags(ctx, running, certs, tokens, port), ca);
    const kubeconfig = kubeconfigText(url, ca, TEST_TOKEN, options.namespace);
    const kubeconfigPath = join(dir, "kubeconfig");
    writeFileSync(kubeconfigPath, kubeconfig, { mode: 0o600 });
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(kubeconfig);
    await installCrds(kubeConfig, options.crds ?? [PROJECT_CRDS], url, ca, ctx.deadline, failed);
    const core = kubeConfig.makeApiClient(CoreV1Api);
    for (const name of options.namespaces ?? []) await core.createNamespace({ body: { metadata: { name } } });
    const startMs = Date.now() - started;
    return {
      url,
      versions: { kubernetes: binaries.kubernetesVersion, etcd: binaries.etcdVersion },
      token: TEST_TOKEN,
      ca,
      kubeconfigPath,
      kubeConfig,
      etcd: running,
      startMs,
      logTail: () => logTail(ctx),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
