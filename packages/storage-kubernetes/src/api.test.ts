import { StoreUnavailableError } from "@ipamkit/core";
import { expect, it } from "vitest";
import { retryOnReset } from "./api.js";

const reset = () => Object.assign(new Error("request to http://127.0.0.1/x failed, reason: read ECONNRESET"), { code: "ECONNRESET" });

it("a request whose reused connection was reset is sent once more; other failures are not retried", async () => {
  let calls = 0;
  expect(await retryOnReset(async () => (++calls === 1 ? Promise.reject(reset()) : "answer"))).toBe("answer");
  expect(calls).toBe(2);

  calls = 0;
  await expect(retryOnReset(async () => Promise.reject(reset()).finally(() => calls++))).rejects.toThrow(/ECONNRESET/);
  expect(calls).toBe(2);

  calls = 0;
  const conflict = Object.assign(new Error("HTTP-Code: 409"), { code: 409 });
  await expect(retryOnReset(async () => Promise.reject(conflict).finally(() => calls++))).rejects.toBe(conflict);
  expect(calls).toBe(1);
});

it("a write resent after a reset and refused as stale reports an unknown outcome, not a conflict", async () => {
  const conflict = Object.assign(new Error("HTTP-Code: 409"), { code: 409 });
  let calls = 0;
  const resentWrite = retryOnReset(async () => Promise.reject(++calls === 1 ? reset() : conflict), {
    write: "replace IPPool kube-system/x",
  });
  await expect(resentWrite).rejects.toBeInstanceOf(StoreUnavailableError);
  await expect(resentWrite).rejects.toThrow(/replace IPPool kube-system\/x: the connection was reset .* unknown/);
  expect(calls).toBe(2);
  // a read resent the same way, or a write refused the first time, is what it is
  calls = 0;
  await expect(retryOnReset(async () => Promise.reject(++calls === 1 ? reset() : conflict))).rejects.toBe(conflict);
  await expect(retryOnReset(async () => Promise.reject(conflict), { write: "replace IPPool kube-system/x" })).rejects.toBe(conflict);
});
