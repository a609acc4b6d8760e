import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMemoryStore } from "@ipamkit/core";
import { createFileStore } from "@ipamkit/storage-file";
import { afterEach, describe, expect, it } from "vitest";
import { runDemo } from "./demo.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("demo", () => {
  for (const [name, make] of [
    ["memory", () => createMemoryStore()],
    [
      "file",
      () => {
        const dir = mkdtempSync(join(tmpdir(), "ipamkit-demo-test-"));
        dirs.push(dir);
        return createFileStore({ dir });
      },
    ],
  ] as const) {
    it(`tells the expected story on the ${name} store`, async () => {
      const steps = Object.fromEntries((await runDemo(make())).map((s) => [s.step, s.result]));
      expect(steps["ADD default/web-0 (dual-stack)"]).toBe("10.10.0.3, fd00:10::2");
      expect(steps["ADD default/web-0 again (idempotent)"]).toBe("10.10.0.3, fd00:10::2");
      expect(steps["ADD default/db-0 reborn on node B"]).toBe("10.10.0.5, fd00:10::4");
      expect(steps["DEL the stale sandbox (exact key)"]).toBe("freed 10.10.0.4, fd00:10::3");
      expect(steps["reborn db-0 still holds"]).toBe("10.10.0.5, fd00:10::4");
      expect(steps["DEL the stale sandbox again (idempotent)"]).toBe("freed 0 addresses");
      expect(steps["ADD in overlapping 10.10.0.0/28 (skips .3, .5 held in /24)"]).toBe("10.10.0.4");
    });
  }
});
