import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { buildIpamkitImage, type IpamkitImage } from "../src/image.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** ipamkit's OCI image, built once for this run from the built plugin and installer. */
    ipamkitImage: IpamkitImage;
  }
}

// Every node runs ipamkit's agent from its image: build it once per run (~10 s), not per node.
let dir: string | undefined;
export function setup(project: TestProject): void {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-node-image-"));
  project.provide("ipamkitImage", buildIpamkitImage(dir));
}

export function teardown(): void {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}
