import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findWhereabouts, WHEREABOUTS_BUILD_SCRIPT, whereaboutsCrdFiles, whereaboutsPaths } from "./whereabouts.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("Whereabouts build", () => {
  it("keys the cache by the version go.mod pins, beside the kube-apiserver build", () => {
    const paths = whereaboutsPaths({ IPAMKIT_CACHE_DIR: "/c" });
    expect(paths.version).toMatch(/^v0\.\d+\.\d+$/);
    expect(paths.binary).toBe(`/c/whereabouts-${paths.version}/whereabouts`);
    expect(paths.crds.ippools).toBe(`/c/whereabouts-${paths.version}/crds/whereabouts.cni.cncf.io_ippools.yaml`);
  });

  it("a missing build is an error naming the exact command, never a skip", () => {
    expect(() => findWhereabouts({ IPAMKIT_CACHE_DIR: "/nonexistent-ipamkit-cache" })).toThrow(
      `run ${WHEREABOUTS_BUILD_SCRIPT} once on this machine`,
    );
  });

  it("a binary without its complete CRD copy counts as not built", () => {
    const cache = mkdtempSync(join(tmpdir(), "ipamkit-wb-cache-"));
    dirs.push(cache);
    const paths = whereaboutsPaths({ IPAMKIT_CACHE_DIR: cache });
    mkdirSync(paths.crdDir, { recursive: true });
    writeFileSync(paths.binary, "#!/bin/sh\n", { mode: 0o755 });
    writeFileSync(paths.crds.ippools, "");
    expect(() => findWhereabouts({ IPAMKIT_CACHE_DIR: cache })).toThrow(`${paths.crdDir}/`);
  });

  it("the cached build is Whereabouts' own binary at the pinned version, with its three CRDs", () => {
    const build = findWhereabouts();
    // the CNI skeleton prints its "about" text on stderr
    const about = spawnSync(build.binary, ["--version"], { encoding: "utf8" });
    expect(about.status).toBe(0);
    expect(about.stderr).toContain(`whereabouts ${build.version} `);
    expect(whereaboutsCrdFiles(build).map((f) => f.slice(build.crdDir.length + 1))).toEqual([
      "whereabouts.cni.cncf.io_ippools.yaml",
      "whereabouts.cni.cncf.io_nodeslicepools.yaml",
      "whereabouts.cni.cncf.io_overlappingrangeipreservations.yaml",
    ]);
  });
});
