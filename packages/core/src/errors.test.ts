import { describe, expect, it } from "vitest";
import { InvalidRequestError, IpamError, StoreConflictError, StoreUnavailableError } from "./errors.js";
import { withConflictRetry } from "./retry.js";

describe("errors across copies of @ipamkit/core", () => {
  it("instanceof holds for the same class of another module instance, and only for it", async () => {
    // a second instance of this very module, as a separately bundled store carries
    // @ts-expect-error a query import: vite gives a second instance of the module
    const other = (await import("./errors.js?copy")) as typeof import("./errors.js");
    expect(other.StoreConflictError).not.toBe(StoreConflictError);
    const foreign = new other.StoreConflictError("IPPool kube-system/x");
    expect(foreign).toBeInstanceOf(StoreConflictError);
    expect(foreign).toBeInstanceOf(IpamError);
    expect(foreign).not.toBeInstanceOf(StoreUnavailableError);
    expect(new StoreUnavailableError("down")).not.toBeInstanceOf(StoreConflictError);
    expect(new Error("plain")).not.toBeInstanceOf(IpamError);
    expect({ code: "STORE_CONFLICT" }).not.toBeInstanceOf(StoreConflictError);
    expect(new other.InvalidRequestError("x")).toBeInstanceOf(InvalidRequestError);
  });

  it("the retry helper retries a conflict thrown by another copy", async () => {
    // @ts-expect-error a query import: vite gives a second instance of the module
    const other = (await import("./errors.js?copy")) as typeof import("./errors.js");
    let calls = 0;
    const result = await withConflictRetry(
      async () => {
        calls++;
        if (calls < 3) throw new other.StoreConflictError("pool");
        return "done";
      },
      { baseDelayMs: 1, maxDelayMs: 2 },
    );
    expect([result, calls]).toEqual(["done", 3]);
  });
});
