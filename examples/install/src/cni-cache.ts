import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

// The runtimes' own record of live attachments: libcni caches every successful ADD in
// <cacheDir>/results/<network>-<containerID>-<ifname> (kind cniCacheV1, the network config
// base64-encoded in `config`) and removes it on DEL. containerd and CRI-O use /var/lib/cni;
// Multus caches its delegates' under /var/lib/cni/multus. An entry whose config names one of
// ipamkit's binaries as an `ipam.type` is an attachment whose DEL still needs that binary.

/** A cached attachment that uses ipamkit, or a cache file that could not be read (counted as in use). */
export interface CachedAttachment {
  file: string;
  containerId?: string;
  ifName?: string;
  networkName?: string;
  /** Why the file counts although it could not be read. */
  unreadable?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Every `ipam.type` anywhere in a network config (a conf, a conflist's plugins, Multus' delegates). */
export function ipamTypes(config: unknown): string[] {
  const found: string[] = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) for (const item of value) walk(item);
    else if (isObject(value)) {
      for (const [key, inner] of Object.entries(value)) {
        if (key === "ipam" && isObject(inner) && typeof inner.type === "string") found.push(inner.type);
        walk(inner);
      }
    }
  };
  walk(config);
  return found;
}

/** The entry of one cache file when its config uses one of `names`; undefined when it does not. */
export function cachedAttachment(file: string, text: string, names: readonly string[]): CachedAttachment | undefined {
  let entry: unknown;
  let config: unknown;
  try {
    entry = JSON.parse(text);
    if (!isObject(entry) || typeof entry.config !== "string") throw new Error("no config in it");
    config = JSON.parse(Buffer.from(entry.config, "base64").toString("utf8"));
  } catch (error) {
    return { file, unreadable: (error as Error).message };
  }
  if (!ipamTypes(config).some((type) => names.includes(type))) return undefined;
  const str = (key: string) => (typeof entry[key] === "string" ? { [key]: entry[key] as string } : {});
  return { file, ...str("containerId"), ...str("ifName"), ...str("networkName") };
}

/** The attachments in `dirs` (absolute paths as this process sees them) that use one of `names`; a missing dir has none. */
export function attachmentsUsing(dirs: readonly string[], names: readonly string[]): CachedAttachment[] {
  const out: CachedAttachment[] = [];
  for (const dir of dirs) {
    let files: string[];
    try {
      files = readdirSync(dir, { withFileTypes: true })
        .filter((d) => d.isFile())
        .map((d) => d.name)
        .sort();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
      out.push({ file: dir, unreadable: (error as Error).message });
      continue;
    }
    for (const name of files) {
      const file = join(dir, name);
      let text: string;
      try {
        text = readFileSync(file, "utf8");
      } catch (error) {
        // removed by a DEL meanwhile: not an attachment any more
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
        out.push({ file, unreadable: (error as Error).message });
        continue;
      }
      const found = cachedAttachment(file, text, names);
      if (found !== undefined) out.push(found);
    }
  }
  return out;
}
