import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { loadAllYaml } from "@kubernetes/client-node";
import { expect, it } from "vitest";
import { clusterNetworks } from "./cluster.js";

// docs/install.md's "With Multus" NADs are the ones the cluster tests attach (cluster.test.ts):
// the same CNI configs, byte for byte once parsed, with the host interfaces named as the doc does.
const INSTALL = fileURLToPath(new URL("../../../docs/install.md", import.meta.url));

it("docs/install.md shows the NADs the cluster tests use", () => {
  const doc = readFileSync(INSTALL, "utf8");
  const section = doc.slice(doc.indexOf("## 5. With Multus"), doc.indexOf("## What was run"));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  const nads = loadAllYaml(yaml) as { kind: string; metadata: { name: string }; spec: { config: string } }[];
  const shown = Object.fromEntries(nads.map((n) => [n.metadata.name, JSON.parse(n.spec.config)]));
  expect(nads.every((n) => n.kind === "NetworkAttachmentDefinition")).toBe(true);
  expect(shown).toEqual(clusterNetworks({ master: "eth1", bridge: "br-nad" }).configs);
});
