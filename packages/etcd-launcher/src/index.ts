import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { get as httpGet } from "node:http";
import { get as httpsGet } from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Starts Debian's etcd (package etcd-server), or the binary given, on 127.0.0.1 with free ports and a temporary data
 * dir (on /dev/shm when there is one) for tests and benchmarks. Never listens anywhere else.
 */
export interface EtcdInstance {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly dataDir: string;
  /** The etcd process's pid while it runs (for CPU accounting). */
  readonly pid: number | undefined;
  /** SIGKILL, no cleanup (the data dir stays). */
  kill(): Promise<void>;
  /** Starts again on the same ports and data dir and waits until healthy. */
  restart(): Promise<void>;
  /** Stops and removes the data dir. */
  stop(): Promise<void>;
}

export interface StartEtcdOptions {
  /** Extra etcd flags. */
  args?: string[];
  /** Serve clients over TLS and require client certificates signed by `ca` (PEM file paths). */
  tls?: { ca: string; cert: string; key: string; clientCert: string; clientKey: string };
  /** How long to wait for health. Default 15 s. */
  timeoutMs?: number;
  /** The etcd binary to run (e.g. one built by test-infra/kube-apiserver). Default: Debian's. */
  binary?: string;
  /** Picks each port (default {@link freePort}). */
  pickPort?: () => Promise<number>;
}

/**
 * A port found free can be taken by another process before etcd binds it (tests run in parallel):
 * etcd then exits with "address already in use", and it is started again on fresh ports and a
 * fresh data dir, up to this many times in all.
 */
export const PORT_ATTEMPTS = 5;

const INSTALL_HINT =
  "etcd is not installed: install Debian's etcd-server (apt-get install -y etcd-server etcd-client); `npm test` does this when run as root";

export function etcdBinary(): string {
  for (const candidate of ["/usr/bin/etcd", "/usr/local/bin/etcd"]) if (existsSync(candidate)) return candidate;
  try {
    return execFileSync("sh", ["-c", "command -v etcd"], { encoding: "utf8" }).trim() || fail();
  } catch {
    return fail();
  }
}

function fail(): never {
  throw new Error(INSTALL_HINT);
}

/** A free TCP port on 127.0.0.1 (for launchers of test servers). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/**
 * A listener holding a free port on 127.0.0.1, as another test's server would hold it between a
 * launcher's `freePort()` and its server's bind; its `pickPort` hands out that port first, then
 * free ones, each recorded in `picked` (for the launchers' own tests of that race).
 */
export async function holdPort(): Promise<{ port: number; picked: number[]; pickPort: () => Promise<number>; release: () => void }> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  if (typeof address !== "object" || address === null) throw new Error("no port");
  const picked: number[] = [];
  const pickPort = async () => {
    const port = picked.length === 0 ? address.port : await freePort();
    picked.push(port);
    return port;
  };
  return { port: address.port, picked, pickPort, release: () => server.close() };
}

function getHealth(endpoint: string, tls: StartEtcdOptions["tls"]): Promise<boolean> {
  return new Promise((resolve) => {
    const url = `${endpoint}/health`;
    const done = (res: import("node:http").IncomingMessage) => {
      let body = "";
      res.on("data", (d) => {
        body += String(d);
      });
      res.on("end", () => resolve(res.statusCode === 200 && body.includes('"health":"true"')));
    };
    const req =
      tls === undefined
        ? httpGet(url, done)
        : httpsGet(url, { ca: readFileSync(tls.ca), cert: readFileSync(tls.clientCert), key: readFileSync(tls.clientKey) }, done);
    req.on("error", () => resolve(false));
  });
}

async function healthy(endpoint: string, deadline: number, tls: StartEtcdOptions["tls"]): Promise<void> {
  while (Date.now() < deadline) {
    if (await getHealth(endpoint, tls)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`etcd at ${endpoint} did not become healthy in time`);
}

export async function startEtcd(options: StartEtcdOptions = {}): Promise<EtcdInstance> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      if (attempt >= PORT_ATTEMPTS || !String(error).includes("address already in use")) throw error;
    }
  }
}

async function startOnce(options: StartEtcdOptions): Promise<EtcdInstance> {
  const binary = options.binary ?? etcdBinary();
  const base = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
  const pickPort = options.pickPort ?? freePort;
  const [client, peer] = [await pickPort(), await pickPort()];
  const dataDir = mkdtempSync(join(base, "ipamkit-etcd-"));
  const tls = options.tls;
  const endpoint = `${tls === undefined ? "http" : "https"}://127.0.0.1:${client}`;
  const args = [
    "--name=t",
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${endpoint}`,
    `--advertise-client-urls=${endpoint}`,
    `--listen-peer-urls=http://127.0.0.1:${peer}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
    `--initial-cluster=t=http://127.0.0.1:${peer}`,
    "--initial-cluster-state=new",
    "--logger=zap",
    "--log-level=error",
    ...(tls === undefined ? [] : [`--cert-file=${tls.cert}`, `--key-file=${tls.key}`, `--trusted-ca-file=${tls.ca}`, "--client-cert-auth"]),
    ...(options.args ?? []),
  ];
  let child: ChildProcess | undefined;
  const launch = async () => {
    child = spawn(binary, args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr?.on("data", (d) => {
      stderr = (stderr + String(d)).slice(-4000);
    });
    const exited = new Promise<never>((_, reject) => child?.once("exit", (code) => reject(new Error(`etcd exited (${code}): ${stderr}`))));
    await Promise.race([healthy(endpoint, Date.now() + (options.timeoutMs ?? 15_000), tls), exited]);
    exited.catch(() => undefined);
  };
  const kill = async () => {
    const c = child;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once("exit", () => resolve());
      c.kill("SIGKILL");
    });
  };
  try {
    await launch();
  } catch (error) {
    await kill();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    endpoint,
    dataDir,
    get pid() {
      return child?.exitCode === null && child.signalCode === null ? child.pid : undefined;
    },
    kill,
    restart: launch,
    async stop() {
      await kill();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Writes a throw-away CA, a server certificate for 127.0.0.1 and a client certificate into `dir` (openssl). */
export function makeTestCertificates(dir: string): NonNullable<StartEtcdOptions["tls"]> {
  const sh = (cmd: string) => execFileSync("sh", ["-c", cmd], { cwd: dir, stdio: "pipe" });
  sh("openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=ipamkit-test-ca");
  for (const [name, ext] of [
    ["server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"],
    ["client", "extendedKeyUsage=clientAuth"],
  ] as const) {
    sh(`openssl req -newkey rsa:2048 -nodes -keyout ${name}.key -out ${name}.csr -subj /CN=${name}`);
    sh(
      `printf '${ext}\n' > ${name}.ext && openssl x509 -req -in ${name}.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out ${name}.pem -days 1 -extfile ${name}.ext`,
    );
  }
  const at = (f: string) => join(dir, f);
  return { ca: at("ca.pem"), cert: at("server.pem"), key: at("server.key"), clientCert: at("client.pem"), clientKey: at("client.key") };
}
