import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { formatTable, runCniDemo } from "./cni-demo.js";

// The Quick-start demo: the built CNI binary on the embedded file store, in a temporary directory.
const plugin = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "cni-plugin", "dist", "ipamkit");
const dir = mkdtempSync(join(tmpdir(), "ipamkit-demo-"));
try {
  console.log(
    `ipamkit CNI plugin demo — ${plugin}\nfile store in ${join(dir, "store")}, ranges 10.10.0.0/24 (gateway .1, .2 excluded) and fd00:10::/64\n`,
  );
  console.log(formatTable(runCniDemo(plugin, dir)));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
