import { type AttachmentKey, attachmentKey, type IpamStore } from "@ipamkit/core";
import type { ConformanceOptions } from "./options.js";

export interface SuiteContext {
  /** The store of the running test. */
  store: () => IpamStore;
  options: ConformanceOptions;
}

export const key = (containerId: string, ifName = "eth0"): AttachmentKey => attachmentKey({ containerId, ifName });
