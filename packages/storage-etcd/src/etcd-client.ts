import { InvalidRequestError, StoreUnavailableError } from "@ipamkit/core";
import { noop } from "cockatiel";
import { Etcd3, type IOptions } from "etcd3";
import { mapEtcdError, STORE_NAME } from "./errors.js";
import { checkEndpoint, type EtcdStoreOptions, normalizeEndpoint, resolveTls } from "./options.js";
import { DEFAULT_RANGE_PAGE_SIZE, type PagedRange, readPrefixPaged } from "./range-pages.js";

/** One etcd connection as the store uses it: every request under the deadline, failures mapped in one place. */
export interface EtcdConnection {
  readonly client: Etcd3;
  /** Whether the store opened the client (and so closes it). */
  readonly owned: boolean;
  readonly endpoints: readonly string[];
  /**
   * Runs one etcd call under the request deadline, mapping every failure in one place. A write
   * (`write`) that fails unavailable — UNAVAILABLE after a dropped connection, a deadline — may
   * have been applied: its error says so (`outcomeUnknown`), and core reads again to find out.
   */
  call<T>(operation: string, fn: () => Promise<T>, write?: boolean): Promise<T>;
  /** Every key under a prefix, paged (see range-pages.ts), each request under the deadline. */
  readPrefix(operation: string, prefix: string, only?: { minModRevision?: string; keysOnly?: boolean }): Promise<PagedRange>;
  /** The keys (no values) under a prefix. */
  keysUnder(operation: string, prefix: string): Promise<string[]>;
}

function credentialsOf(tls: ReturnType<typeof resolveTls>): IOptions["credentials"] | undefined {
  if (tls === undefined) return undefined;
  return {
    rootCertificate: tls.ca ?? Buffer.alloc(0),
    ...(tls.key ? { privateKey: tls.key } : {}),
    ...(tls.cert ? { certChain: tls.cert } : {}),
  };
}

/** Checks the options and opens (or adopts) the client. */
export function openConnection(options: EtcdStoreOptions): EtcdConnection {
  const tls = resolveTls(options.tls);
  for (const endpoint of options.endpoints ?? []) checkEndpoint(endpoint);
  const endpoints = (options.endpoints ?? ["127.0.0.1:2379"]).map((e) => normalizeEndpoint(e, tls !== undefined));
  const requestTimeoutMs = options.requestTimeoutMs ?? 5_000;
  const pageSize = options.rangePageSize ?? DEFAULT_RANGE_PAGE_SIZE;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1)
    throw new InvalidRequestError(`rangePageSize ${pageSize}: must be a positive integer`);
  const credentials = credentialsOf(tls);
  const client =
    options.client ??
    new Etcd3({
      hosts: endpoints,
      dialTimeout: options.dialTimeoutMs ?? 3_000,
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + requestTimeoutMs }),
      // core's withConflictRetry is the only retry loop: no hidden retries or circuit breakers here.
      faultHandling: { host: () => noop, global: noop },
      // each store its own connection: grpc-js otherwise shares one per target across the process
      // (an agent hosting several nodes, a library user with two stores), coupling their fates
      grpcOptions: { "grpc.use_local_subchannel_pool": 1 },
      ...(credentials === undefined ? {} : { credentials }),
      ...(options.username === undefined ? {} : { auth: { username: options.username, password: options.password ?? "" } }),
    });

  async function call<T>(operation: string, fn: () => Promise<T>, write = false): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new StoreUnavailableError(`etcd ${operation} timed out after ${requestTimeoutMs} ms on ${endpoints.join(",")}`, {
              component: STORE_NAME,
              outcomeUnknown: write,
            }),
          ),
        requestTimeoutMs + 250,
      );
    });
    try {
      return await Promise.race([fn(), deadline]);
    } catch (error) {
      throw mapEtcdError(error, operation, endpoints, { write });
    } finally {
      clearTimeout(timer);
    }
  }

  const readPrefix: EtcdConnection["readPrefix"] = (operation, prefix, only = {}) =>
    readPrefixPaged({ client, prefix, pageSize, ...only, run: (request) => call(operation, request) });
  const keysUnder = async (operation: string, prefix: string) =>
    (await readPrefix(operation, prefix, { keysOnly: true })).kvs.map((kv) => kv.key.toString("utf8"));
  return { client, owned: options.client === undefined, endpoints, call, readPrefix, keysUnder };
}
