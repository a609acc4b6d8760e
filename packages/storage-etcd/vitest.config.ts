import { defineConfig } from "vitest/config";
import { preset } from "../../scripts/vitest.preset.js";

// One real etcd (Debian etcd-server) for the run, started on 127.0.0.1 by test/global-setup.ts.
export default defineConfig(preset("storage-etcd", { globalSetup: ["./test/global-setup.ts"], testTimeout: 60_000, hookTimeout: 60_000 }));
