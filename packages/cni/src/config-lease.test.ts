import { describe, expect, it } from "vitest";
import { add } from "./commands.js";
import { ConfigError, loadIpamConfig } from "./config.js";
import { CniError } from "./errors.js";
import type { ConfigFs } from "./types.js";

const FLAT = "/etc/cni/net.d/whereabouts.d/whereabouts.conf";
/** A node whose flat file names the kubeconfig (a node-level key: issue 47). */
const KUBE = { [FLAT]: { kubernetes: { kubeconfig: "/k" } } };

function fs(files: Record<string, object> = {}): ConfigFs {
  return {
    exists: (path) => Object.hasOwn(files, path),
    readText: (path) => JSON.stringify(files[path]),
  };
}

const load = (ipam: Record<string, unknown>, files: Record<string, object> = {}) =>
  loadIpamConfig(JSON.stringify({ cniVersion: "1.1.0", name: "net1", ipam: { type: "whereabouts", range: "10.9.0.0/24", ...ipam } }), {
    fs: fs(files),
    command: "ADD",
  });

const configError = (run: () => unknown): ConfigError => {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("no ConfigError");
};

describe("ipam.whereabouts_lease", () => {
  it("is off by default, and on with the Kubernetes store (inline or from the flat file)", () => {
    // unset: auto, taken only while Whereabouts is seen using it
    expect(load({}, KUBE).kubernetes.whereaboutsLease).toBe("auto");
    expect(load({ node_block_size: 16 }, KUBE).kubernetes.whereaboutsLease).toBeUndefined();
    expect(load({}).kubernetes.whereaboutsLease).toBeUndefined();
    expect(load({ whereabouts_lease: false }, KUBE).kubernetes.whereaboutsLease).toBeUndefined();
    expect(load({ whereabouts_lease: true }, KUBE).kubernetes).toEqual({
      kubeconfig: "/k",
      whereaboutsLease: true,
    });
    const flat = { datastore: "kubernetes", kubernetes: { kubeconfig: "/k" }, whereabouts_lease: true };
    expect(load({}, { [FLAT]: flat }).kubernetes.whereaboutsLease).toBe(true);
  });

  it("is refused (code 7, naming the key) with another store or with per-node blocks, never ignored", () => {
    const file = configError(() => load({ datastore: "file", whereabouts_lease: true }));
    expect({ code: file.cniCode, key: file.key }).toEqual({ code: 7, key: "ipam.whereabouts_lease" });
    expect(file.message).toContain("ipam.whereabouts_lease");
    expect(file.message).toContain('needs datastore "kubernetes"');
    const etcd = configError(() => load({ etcd_host: "127.0.0.1:2379", whereabouts_lease: true }));
    expect(etcd.cniCode).toBe(7);
    expect(etcd.message).toContain('not "etcd"');
    const blocks = configError(() => load({ whereabouts_lease: true, node_block_size: 16, node_name: "n1" }, KUBE));
    expect(blocks.cniCode).toBe(7);
    expect(blocks.message).toContain("node_block_size");
  });

  it("is a typed error, not a default, for a value that is not a boolean", () => {
    const error = configError(() => load({ whereabouts_lease: "yes" }, KUBE));
    expect(error.cniCode).toBe(7);
    expect(error.message).toContain("whereabouts_lease");
  });

  it("fails an ADD with code 2 when asked for but the edge provides no Lease", async () => {
    const config = load({ whereabouts_lease: true }, KUBE);
    const ctx = { config, ranges: [], store: {} as never, args: { ips: [], ignoreUnknown: false, unknown: [] }, stderr: () => undefined };
    await expect(add(ctx)).rejects.toBeInstanceOf(CniError);
    await expect(add(ctx)).rejects.toMatchObject({ code: 2, message: expect.stringContaining("whereabouts_lease") });
  });
});
