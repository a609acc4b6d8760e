import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { CNI_CODES } from "./errors.js";

// docs/troubleshooting.md has a section for every code the plugin answers, and none for a code it
// does not: a code added to CNI_CODES without its documentation fails here.
it("docs/troubleshooting.md documents exactly the CNI codes of CNI_CODES", () => {
  const doc = readFileSync(new URL("../../../docs/troubleshooting.md", import.meta.url), "utf8");
  const documented = [...doc.matchAll(/^### (\d+) — /gm)].map((m) => Number(m[1])).sort((a, b) => a - b);
  const codes = [...new Set<number>(Object.values(CNI_CODES))].sort((a, b) => a - b);
  expect(documented).toEqual(codes);
});
