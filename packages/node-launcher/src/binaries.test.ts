import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { findNodeBinaries, NODE_BUILD_SCRIPT, NodeBinariesMissingError, nodeBinaryPaths } from "./binaries.js";

it("paths are keyed by the versions the test-infra/node modules pin", () => {
  const paths = nodeBinaryPaths({ IPAMKIT_CACHE_DIR: "/c" });
  expect(paths.versions).toEqual({ kubelet: "v1.37.2", containerd: "v2.4.2", crictl: "v1.37.0", cniPlugins: "v1.10.0" });
  expect(paths.kubelet).toBe("/c/kubelet-v1.37.2/kubelet");
  expect(paths.shim).toBe("/c/containerd-v2.4.2/containerd-shim-runc-v2");
  expect(paths.cniPluginDir).toBe("/c/cni-plugins-v1.10.0");
});

it("an empty cache fails with the build command, never a skip", () => {
  const empty = mkdtempSync(join(tmpdir(), "ipamkit-node-cache-"));
  try {
    let thrown: unknown;
    try {
      findNodeBinaries({ IPAMKIT_CACHE_DIR: empty });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(NodeBinariesMissingError);
    expect((thrown as NodeBinariesMissingError).code).toBe("NODE_BINARIES_MISSING");
    expect((thrown as Error).message).toContain(NODE_BUILD_SCRIPT);
    expect((thrown as NodeBinariesMissingError).missing).toContain(join(empty, "kubelet-v1.37.2", "kubelet"));
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});

it("the real cache holds every binary (build: test-infra/node/build.sh)", () => {
  const found = findNodeBinaries();
  expect(found.kubelet).toMatch(/kubelet-v1\.37\.2\/kubelet$/);
});
