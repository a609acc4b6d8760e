import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { runCniDemo } from "./cni-demo.js";

const plugin = join(import.meta.dirname, "..", "..", "cni-plugin", "dist", "ipamkit");

it("the Quick-start demo tells the expected story with the built binary", () => {
  const dir = mkdtempSync(join(tmpdir(), "ipamkit-demo-test-"));
  try {
    const rows = runCniDemo(plugin, dir);
    const at = (step: string, pod: string) => rows.find((r) => r.step === step && r.pod === pod)?.result;
    expect(rows.filter((r) => r.step === "ADD (dual-stack)").map((r) => r.result)).toEqual([
      "10.10.0.3/24, fd00:10::1/64",
      "10.10.0.4/24, fd00:10::2/64",
      "10.10.0.5/24, fd00:10::3/64",
      "10.10.0.6/24, fd00:10::4/64",
    ]);
    expect(at("ADD again (idempotent)", "default/web-0")).toBe("10.10.0.3/24, fd00:10::1/64");
    expect(at("CHECK against its ADD result", "default/web-0")).toBe("ok");
    expect(at("DEL again (idempotent)", "default/web-2")).toBe("ok");
    expect(at("ADD reborn after its node died", "default/db-0")).toBe("10.10.0.5/24, fd00:10::3/64");
    expect(at("CHECK the reborn pod still holds its IPs", "default/db-0")).toBe("ok");
    expect(at("GC (valid: web-0, db-0)", "-")).toBe("ok");
    expect(at("ADD after GC reuses freed IPs", "default/web-9")).toBe("10.10.0.4/24, fd00:10::2/64");
    expect(at("STATUS", "-")).toBe("ok");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
