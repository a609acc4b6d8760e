import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { DOC_PATH, REGENERATE, renderConfigurationDoc } from "../../../scripts/gen-config-docs.js";

// docs/configuration.md is generated from the config schemas, the key tables beside them and the
// errors the real validators print: a key, option or message changed without regenerating fails here.
it("docs/configuration.md is what scripts/gen-config-docs.ts generates from the schemas and programs", async () => {
  const generated = await renderConfigurationDoc();
  const written = readFileSync(DOC_PATH, "utf8");
  expect(written, `docs/configuration.md is out of date: run ${REGENERATE}`).toBe(generated);
}, 180_000);
