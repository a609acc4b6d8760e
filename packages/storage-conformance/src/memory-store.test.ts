import { createMemoryStore } from "@ipamkit/core";
import { describeStoreConformance } from "./index.js";

// The in-memory reference store passes the same suite as every other store.
describeStoreConformance({ name: "memory", create: () => createMemoryStore() });
