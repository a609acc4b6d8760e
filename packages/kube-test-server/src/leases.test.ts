import { PatchStrategy, setHeaderOptions, type V1Lease } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failure, type Harness, harnessTargets, NS, raw } from "./test-support.js";

for (const target of harnessTargets()) {
  describe(`leases on ${target.name}`, () => {
    let h: Harness;
    beforeAll(async () => {
      h = await target.start();
    });
    afterAll(async () => {
      await h?.close();
    });

    const lease = (name: string, spec: Record<string, unknown> = {}): V1Lease => ({
      metadata: { name },
      spec: { holderIdentity: "node-a", ...spec },
    });
    const LEASES = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;

    describe("leases", () => {
      it("refuses a MicroTime without exactly 6 fractional digits: a JavaScript Date (3 digits) is 400", async () => {
        const { code, status } = await failure(
          h.coordination.createNamespacedLease({ namespace: NS, body: lease("l-date", { acquireTime: new Date() }) }),
        );
        expect(code).toBe(400);
        expect(status.reason).toBe("BadRequest");
        expect(status.message).toMatch(
          /^Lease in version "v1" cannot be handled as a Lease: parsing time ".*" as "2006-01-02T15:04:05.000000Z07:00"/,
        );
        for (const renewTime of ["2026-12-02T10:00:00Z", "2026-12-02T10:00:00.1234567Z", "2026-12-02 10:00:00.123456Z"]) {
          const response = await raw(h, "POST", LEASES, { metadata: { name: "l-bad" }, spec: { renewTime } });
          expect(response.status).toBe(400);
        }
      });

      it("accepts 6 digits and stores them in UTC", async () => {
        const created = await raw(h, "POST", LEASES, {
          metadata: { name: "l-micro" },
          spec: {
            holderIdentity: "a",
            acquireTime: "2026-12-02T10:00:00.123456Z",
            renewTime: "2026-12-02T12:30:00.000001+02:00",
            leaseDurationSeconds: 15,
          },
        });
        expect(created.status).toBe(201);
        expect(created.body).toMatchObject({
          spec: { acquireTime: "2026-12-02T10:00:00.123456Z", renewTime: "2026-12-02T10:30:00.000001Z" },
        });
      });

      it("refuses a patch that writes a 3-digit MicroTime (422 on the patch)", async () => {
        await raw(h, "POST", LEASES, { metadata: { name: "l-patch" }, spec: { holderIdentity: "a" } });
        const { code } = await failure(
          h.coordination.patchNamespacedLease(
            { namespace: NS, name: "l-patch", body: { spec: { renewTime: "2026-12-02T10:00:00.123Z" } } },
            setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
          ),
        );
        expect(code).toBe(422);
        const ok = await h.coordination.patchNamespacedLease(
          { namespace: NS, name: "l-patch", body: { spec: { renewTime: "2026-12-02T10:00:00.123000Z" } } },
          setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
        );
        // client-node leaves a V1MicroTime as the string it received
        expect(ok.spec?.renewTime).toBe("2026-12-02T10:00:00.123000Z");
      });

      it("creates a missing lease on PUT (AllowCreateOnUpdate) but needs a resourceVersion to update one", async () => {
        const created = await h.coordination.replaceNamespacedLease({ namespace: NS, name: "l-put", body: lease("l-put") });
        expect(created.metadata?.uid).toBeDefined();
        const { code, status } = await failure(
          h.coordination.replaceNamespacedLease({ namespace: NS, name: "l-put", body: lease("l-put") }),
        );
        expect(code).toBe(422);
        expect(status.message).toContain("metadata.resourceVersion: Invalid value: 0: must be specified for an update");
        const stale = await failure(
          h.coordination.replaceNamespacedLease({
            namespace: NS,
            name: "l-put",
            body: { ...lease("l-put"), metadata: { name: "l-put", resourceVersion: "1" } },
          }),
        );
        expect(stale.code).toBe(409);
      });

      it("validates leaseDurationSeconds (422) and has no generation", async () => {
        const { code, status } = await failure(
          h.coordination.createNamespacedLease({ namespace: NS, body: lease("l-dur", { leaseDurationSeconds: 0 }) }),
        );
        expect(code).toBe(422);
        expect(status.message).toBe(
          'Lease.coordination.k8s.io "l-dur" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0',
        );
        const created = await h.coordination.createNamespacedLease({ namespace: NS, body: lease("l-gen", { leaseDurationSeconds: 10 }) });
        expect(created.metadata?.generation).toBeUndefined();
      });
    });
  });
}
