import { describe, expect, it } from "vitest";
import { attachmentKey } from "./key.js";
import { keyQueue } from "./key-queue.js";

const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });
const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 1));

describe("keyQueue", () => {
  it("runs one key's calls one after the other, other keys' at once, and goes on after a failure", async () => {
    const inOrder = keyQueue();
    const log: string[] = [];
    const call =
      (name: string, fail = false) =>
      async () => {
        log.push(`${name} start`);
        await tick();
        log.push(`${name} end`);
        if (fail) throw new Error(name);
        return name;
      };
    const a1 = inOrder(key("a"), call("a1", true));
    const a2 = inOrder(key("a"), call("a2"));
    const b1 = inOrder(key("b"), call("b1"));
    await expect(a1).rejects.toThrow("a1");
    expect(await a2).toBe("a2");
    expect(await b1).toBe("b1");
    expect(log.indexOf("a2 start")).toBeGreaterThan(log.indexOf("a1 end"));
    expect(log.indexOf("b1 start")).toBeLessThan(log.indexOf("a1 end"));
  });
});
