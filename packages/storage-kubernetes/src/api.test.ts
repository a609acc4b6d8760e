import { StoreUnavailableError } from "@ipamkit/core";
import { expect, it } from "vitest";
import { RESET_ATTEMPTS, retryOnReset } from "./api.js";

const reset = () => Object.assign(new Error("request to http://127.0.0.1/x failed, reason: read ECONNRESET"), { code: "ECONNRESET" });

it("a request whose reused connection was reset is sent again, up to RESET_ATTEMPTS in all; other failures are not retried", async () => {
  let calls = 0;
  expect(await retryOnReset(async () => (++calls === 1 ? Promise.reject(reset()) : "answer"))).toBe("answer");
  expect(calls).toBe(2);

  // under load the next idle connection may have been closed too
  calls = 0;
  expect(await retryOnReset(async () => (++calls < RESET_ATTEMPTS ? Promise.reject(reset()) : "answer"))).toBe("answer");
  expect(calls).toBe(RESET_ATTEMPTS);

  calls = 0;
  await expect(retryOnReset(async () => Promise.reject(reset()).finally(() => calls++))).rejects.toThrow(/ECONNRESET/);
  expect(calls).toBe(RESET_ATTEMPTS);

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
  // the same after two resets
  calls = 0;
  const twiceReset = retryOnReset(async () => Promise.reject(++calls <= 2 ? reset() : conflict), { write: "replace IPPool kube-system/x" });
  await expect(twiceReset).rejects.toBeInstanceOf(StoreUnavailableError);
  expect(calls).toBe(3);
  // a read resent the same way, or a write refused the first time, is what it is
  calls = 0;
  await expect(retryOnReset(async () => Promise.reject(++calls === 1 ? reset() : conflict))).rejects.toBe(conflict);
  await expect(retryOnReset(async () => Promise.reject(conflict), { write: "replace IPPool kube-system/x" })).rejects.toBe(conflict);
});
