import { join } from "node:path";
import { type ConfigFs, dispatch, type IpamConfig } from "@ipamkit/cni";
import { createMemoryStore, type IpamStore } from "@ipamkit/core";
import { createFileStore } from "@ipamkit/storage-file";
import { type CniCase, FLAT_DIR } from "./cni-input.js";
import type { Outcome } from "./oracle.js";

/** The flat file a case's `configuration_path` (FLAT_DIR) points at. */
const FLAT_FILE = `${FLAT_DIR}/whereabouts.conf`;

/** A file system that holds only the case's flat file, the node's (at FLAT_DIR): no host file under /etc is ever read. */
export function caseFs(flat: string | undefined): ConfigFs {
  return {
    configurationPath: FLAT_DIR,
    exists: (path) => path === FLAT_FILE && flat !== undefined,
    readText(path) {
      if (path === FLAT_FILE && flat !== undefined) return flat;
      throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: "ENOENT" });
    },
  };
}

/**
 * Opens what the config selects, as the binary does (open-store.ts), except that the file store
 * always lives in the sandbox whatever `data_dir` says, or is replaced by a memory store where the
 * store does not matter.
 */
export function sandboxStores(sandbox: string): { open: (config: IpamConfig, memory: boolean) => Promise<IpamStore>; memory: IpamStore } {
  const memory = createMemoryStore();
  return {
    memory,
    async open(config, useMemory) {
      switch (config.datastore) {
        case "file":
          return useMemory ? memory : createFileStore({ dir: join(sandbox, "file-store") });
        case "etcd": {
          const { createEtcdStore, etcdOptionsFromWhereabouts } = await import("@ipamkit/storage-etcd");
          const e = config.etcd;
          return createEtcdStore({
            ...etcdOptionsFromWhereabouts({
              ...(e.host === undefined ? {} : { etcd_host: e.host }),
              ...(e.username === undefined ? {} : { etcd_username: e.username }),
              ...(e.password === undefined ? {} : { etcd_password: e.password }),
            }),
            dialTimeoutMs: 300,
            requestTimeoutMs: 500,
          });
        }
        case "kubernetes": {
          const { createKubernetesStore } = await import("@ipamkit/storage-kubernetes");
          return createKubernetesStore({
            ...(config.kubernetes.kubeconfig === undefined ? {} : { kubeconfig: config.kubernetes.kubeconfig }),
          });
        }
      }
    },
  };
}

/** Runs one case through `dispatch` in this process. */
export async function runInProcess(
  c: CniCase,
  open: (config: IpamConfig) => Promise<IpamStore>,
  boundMs: number,
): Promise<Outcome & { threw?: unknown }> {
  let stdout = "";
  let stderr = "";
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<"hang">((resolve) => {
    timer = setTimeout(() => resolve("hang"), boundMs * 3);
  });
  try {
    const code = await Promise.race([
      dispatch({
        env: c.env,
        stdin: async () => c.stdin,
        stdout: (text) => {
          stdout += text;
        },
        stderr: (text) => {
          stderr += text;
        },
        fs: caseFs(c.flat),
        hostname: () => "fuzz-node",
        openStore: open,
      }),
      hang,
    ]);
    const ms = performance.now() - started;
    return { exitCode: code === "hang" ? null : code, stdout, stderr, ms };
  } catch (error) {
    return { exitCode: null, stdout, stderr, ms: performance.now() - started, threw: error };
  } finally {
    clearTimeout(timer);
  }
}
