import { type Etcd3, type IKeyValue, Range } from "etcd3";

/** Keys per range request unless the store is told otherwise (`rangePageSize`). */
export const DEFAULT_RANGE_PAGE_SIZE = 1000;

export interface PagedRange {
  kvs: IKeyValue[];
  /** The store revision every page was read at. */
  revision: string;
}

export interface PagedRangeOptions {
  client: Etcd3;
  prefix: string;
  pageSize: number;
  /** Only keys modified at or after this revision. */
  minModRevision?: string;
  /** Keys without their values (listings). */
  keysOnly?: boolean;
  /** Runs one request (the store's deadline and error mapping). */
  run: <T>(request: () => Promise<T>) => Promise<T>;
}

/**
 * Every key under a prefix, `pageSize` keys per request. gRPC refuses answers over 4 MiB, which one
 * range over a large pool, or over every pool, exceeds (the cluster simulation hit 6.7 MB with 1000
 * pools and 20 000 reservations). Every page after the first is read at the first page's
 * revision, so the result is one consistent snapshot, as a single range would be.
 */
export async function readPrefixPaged(options: PagedRangeOptions): Promise<PagedRange> {
  const { client, pageSize, minModRevision, run } = options;
  const range_end = Range.prefix(options.prefix).end;
  let key = Buffer.from(options.prefix);
  let revision: string | undefined;
  const kvs: IKeyValue[] = [];
  for (;;) {
    const request = {
      key,
      range_end,
      limit: pageSize,
      keys_only: options.keysOnly === true,
      ...(revision === undefined ? {} : { revision }),
      ...(minModRevision === undefined ? {} : { min_mod_revision: minModRevision }),
    };
    const response = await run(() => client.kv.range(request));
    revision ??= String(response.header.revision);
    kvs.push(...response.kvs);
    const last = response.kvs.at(-1);
    if (!response.more || last === undefined) return { kvs, revision };
    key = Buffer.concat([last.key, Buffer.from([0])]);
  }
}
