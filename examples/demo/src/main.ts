import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFileStore } from "@ipamkit/storage-file";
import { runDemo } from "./demo.js";

// Runs on the embedded file store in a fresh directory (or IPAMKIT_DEMO_DIR) and prints each step.
const dir = process.env.IPAMKIT_DEMO_DIR ?? mkdtempSync(join(tmpdir(), "ipamkit-demo-"));
const store = createFileStore({ dir });
try {
  const steps = await runDemo(store);
  const width = Math.max(...steps.map((s) => s.step.length));
  console.log(`ipamkit demo — file store at ${dir}\n`);
  for (const s of steps) console.log(`${s.step.padEnd(width)}  →  ${s.result}`);
} finally {
  await store.close();
  if (process.env.IPAMKIT_DEMO_DIR === undefined) rmSync(dir, { recursive: true, force: true });
}
