import { type Harness, ippool, ippools } from "./test-support.js";

/**
 * Create and GET of an IPPool in the test namespace, on the harness `harness()` returns when called
 * (a suite starts its harness in `beforeAll`, after these are made).
 */
export function ippoolCalls(harness: () => Harness) {
  return {
    create: (name: string, extra = {}) => harness().custom.createNamespacedCustomObject({ ...ippools(), body: ippool(name, extra) }),
    get: (name: string) => harness().custom.getNamespacedCustomObject({ ...ippools(), name }),
  };
}
