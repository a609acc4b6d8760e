import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Pool, parseCidr, StoreConflictError } from "@ipamkit/core";
import { createFileStore } from "@ipamkit/storage-file";
import { describe, expect, it } from "vitest";
import { createAgentMetrics, resultCode } from "./metrics.js";
import { parseListenAddress, startMetricsServer } from "./metrics-http.js";

describe("agent metrics", () => {
  it("parses listen addresses, refuses what is not host:port", () => {
    expect(parseListenAddress("127.0.0.1:9464")).toEqual({ host: "127.0.0.1", port: 9464 });
    expect(parseListenAddress("[::1]:0")).toEqual({ host: "::1", port: 0 });
    expect(parseListenAddress(":9464")).toEqual({ host: "", port: 9464 });
    for (const bad of ["9464", "localhost", "host:99999", "::1:80", "a:b"])
      expect(() => parseListenAddress(bad)).toThrow(/is not host:port/);
  });

  it("the result code is the CNI error JSON's code", () => {
    expect(resultCode({ v: 1, exitCode: 0, stdout: "{}", stderr: "" })).toBe("0");
    expect(resultCode({ v: 1, exitCode: 1, stdout: '{"cniVersion":"1.1.0","code":11,"msg":"x"}', stderr: "" })).toBe("11");
    expect(resultCode({ v: 1, exitCode: 1, stdout: "not json", stderr: "" })).toBe("unknown");
  });

  it("counts a real store's requests, a lost compare-and-swap as a conflict, served over HTTP", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ipamkit-metrics-"));
    const metrics = createAgentMetrics();
    const store = metrics.countStore(createFileStore({ dir }));
    const server = await startMetricsServer({ address: "127.0.0.1:0", registry: metrics.registry });
    try {
      const ref = { network: "", cidr: "10.62.0.0/24" };
      const pool = Pool.empty(parseCidr(ref.cidr));
      await store.writePool(ref, pool, undefined);
      await expect(store.writePool(ref, pool, undefined)).rejects.toBeInstanceOf(StoreConflictError);
      await store.readPool(ref);
      const text = await (await fetch(`${server.url}/metrics`)).text();
      expect(text).toContain('ipamkit_store_requests_total{store="storage-file",op="writePool",result="ok"} 1');
      expect(text).toContain('ipamkit_store_requests_total{store="storage-file",op="writePool",result="conflict"} 1');
      expect(text).toContain('ipamkit_store_requests_total{store="storage-file",op="readPool",result="ok"} 1');
      expect(store.capabilities).toEqual(createFileStore({ dir }).capabilities);
    } finally {
      await server.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
