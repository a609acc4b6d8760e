import { readFileSync } from "node:fs";
import { InvalidRequestError } from "@ipamkit/core";
import type { Etcd3 } from "etcd3";

export interface EtcdStoreOptions {
  /** etcd client URLs, e.g. `["https://10.0.0.5:2379"]`. A host without scheme gets https when TLS is set, http otherwise. */
  endpoints?: string[];
  /** TLS: PEM contents or file paths of the CA, client certificate and client key. */
  tls?: { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer } | { caFile?: string; certFile?: string; keyFile?: string };
  /** etcd user name (password authentication). */
  username?: string;
  /** etcd password. Never appears in errors or logs. */
  password?: string;
  /** Key prefix every key lives under. Default `/ipamkit/`. */
  prefix?: string;
  /** Time to connect before a call fails (ms). Default 3 000. */
  dialTimeoutMs?: number;
  /** Deadline of every request (ms); a request past it fails with a retryable error. Default 5 000. */
  requestTimeoutMs?: number;
  /** Keys per range request when reading a pool or listing (each answer must stay under gRPC's 4 MiB). Default 1 000. */
  rangePageSize?: number;
  /** An existing client (tests, or callers that share one). The store does not close an injected client. */
  client?: Etcd3;
}

/** Whereabouts' etcd keys (accepted and dropped upstream since v0.6; honoured here). */
export interface WhereaboutsEtcdConfig {
  etcd_host?: string;
  etcd_username?: string;
  etcd_password?: string;
  etcd_key_file?: string;
  etcd_cert_file?: string;
  etcd_ca_cert_file?: string;
}

/** Maps Whereabouts' `etcd_*` IPAM keys onto store options. `etcd_host` may be a comma list. */
export function etcdOptionsFromWhereabouts(config: WhereaboutsEtcdConfig): EtcdStoreOptions {
  const options: EtcdStoreOptions = {};
  if (config.etcd_host !== undefined && config.etcd_host !== "") options.endpoints = config.etcd_host.split(",").map((h) => h.trim());
  if (config.etcd_username !== undefined) options.username = config.etcd_username;
  if (config.etcd_password !== undefined) options.password = config.etcd_password;
  if (config.etcd_ca_cert_file || config.etcd_cert_file || config.etcd_key_file) {
    options.tls = {
      ...(config.etcd_ca_cert_file ? { caFile: config.etcd_ca_cert_file } : {}),
      ...(config.etcd_cert_file ? { certFile: config.etcd_cert_file } : {}),
      ...(config.etcd_key_file ? { keyFile: config.etcd_key_file } : {}),
    };
  }
  return options;
}

export interface ResolvedTls {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

/** A TLS file's bytes; a file that cannot be read is a configuration error naming the option (and Whereabouts' key). */
function readTlsFile(path: string, option: string, whereaboutsKey: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new InvalidRequestError(`cannot read the etcd TLS file ${path} (tls.${option}, ${whereaboutsKey}): ${reason}`);
  }
}

export function resolveTls(tls: EtcdStoreOptions["tls"]): ResolvedTls | undefined {
  if (tls === undefined) return undefined;
  const buf = (v: string | Buffer | undefined) => (v === undefined ? undefined : Buffer.isBuffer(v) ? v : Buffer.from(v));
  const out: ResolvedTls = {};
  if ("caFile" in tls || "certFile" in tls || "keyFile" in tls) {
    const files = tls as { caFile?: string; certFile?: string; keyFile?: string };
    if (files.caFile !== undefined) out.ca = readTlsFile(files.caFile, "caFile", "etcd_ca_cert_file");
    if (files.certFile !== undefined) out.cert = readTlsFile(files.certFile, "certFile", "etcd_cert_file");
    if (files.keyFile !== undefined) out.key = readTlsFile(files.keyFile, "keyFile", "etcd_key_file");
  } else {
    const pem = tls as { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer };
    const ca = buf(pem.ca);
    const cert = buf(pem.cert);
    const key = buf(pem.key);
    if (ca !== undefined) out.ca = ca;
    if (cert !== undefined) out.cert = cert;
    if (key !== undefined) out.key = key;
  }
  return out;
}

/** `scheme://user:password@` or `user:password@` at the start of an endpoint. */
const USERINFO = /^((?:[a-z][a-z0-9+.-]*:\/\/)?)[^/@]*@/i;

/**
 * Refuses an endpoint that carries credentials (`http://user:password@host:2379`): etcd3 cannot
 * use them, and every error names its endpoint, so the password would reach logs and CNI answers.
 * The message shows the endpoint with the credentials redacted.
 */
export function checkEndpoint(endpoint: string): void {
  if (!USERINFO.test(endpoint)) return;
  throw new InvalidRequestError(
    `etcd endpoint ${endpoint.replace(USERINFO, "$1<redacted>@")} carries credentials in the URL, which are not used: set etcd_username and etcd_password (options username, password) instead`,
  );
}

export function normalizeEndpoint(endpoint: string, tls: boolean): string {
  return /^https?:\/\//.test(endpoint) ? endpoint : `${tls ? "https" : "http"}://${endpoint}`;
}
