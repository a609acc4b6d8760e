import { ConfigError, loadIpamConfig } from "@ipamkit/cni";
import { describe, expect, it } from "vitest";
import { placed, readCorpus } from "../test/whereabouts-corpus.js";

// Every corpus entry through ipamkit's config loader alone (no binary, no API server): it accepts
// what the entry records, and a refusal is one line naming the key and value. The binaries are
// compared in whereabouts-corpus.test.ts.

const FLAT = "/corpus/whereabouts.d/whereabouts.conf";
const KUBECONFIG = "/corpus/whereabouts.d/whereabouts.kubeconfig";

describe("the Whereabouts config corpus through ipamkit's loader", () => {
  it.each(readCorpus().map((entry) => [entry.id, entry] as const))("%s", (_, entry) => {
    const { conf, flat } = placed(entry, { kubeconfig: KUBECONFIG, flatFile: FLAT });
    // the node names its flat file (IPAMKIT_CONFIGURATION_PATH); a NAD's configuration_path is not followed
    const fs = { exists: (path: string) => path === FLAT, readText: () => JSON.stringify(flat), configurationPath: FLAT };
    let outcome: "accept" | "refuse" = "accept";
    try {
      loadIpamConfig(JSON.stringify(conf), { fs, command: "ADD" });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const { message, key } = error as ConfigError;
      expect(message.includes("\n"), message).toBe(false);
      expect(message).toContain(key);
      outcome = "refuse";
    }
    expect(outcome, entry.source).toBe(entry.ipamkit);
  });
});
