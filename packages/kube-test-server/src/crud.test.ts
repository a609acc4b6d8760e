import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ippoolCalls } from "./crud-support.js";
import { API_VERSION, failure, type Harness, harnessTargets, ippool, ippools, metadataOf, NS, pod, raw, rvOf } from "./test-support.js";

for (const target of harnessTargets()) {
  describe(`crud on ${target.name}`, () => {
    let h: Harness;
    beforeAll(async () => {
      h = await target.start();
    });
    afterAll(async () => {
      await h?.close();
    });

    const { create, get } = ippoolCalls(() => h);
    const PATH = `/apis/${API_VERSION}/namespaces/${NS}/ippools`;

    describe("create", () => {
      it("sets uid, creationTimestamp (seconds), resourceVersion and generation 1, and GET returns the same object", async () => {
        const created = await create("c-fields");
        const m = metadataOf(created);
        expect(m.uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        expect(m.creationTimestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
        expect(m.resourceVersion).toMatch(/^[1-9]\d*$/);
        expect(m.generation).toBe(1);
        expect(m.namespace).toBe(NS);
        expect(await get("c-fields")).toEqual(created);
      });

      it("answers 409 AlreadyExists for an existing name", async () => {
        await create("c-dup");
        const { code, status } = await failure(create("c-dup"));
        expect(code).toBe(409);
        expect(status).toMatchObject({
          kind: "Status",
          apiVersion: "v1",
          status: "Failure",
          reason: "AlreadyExists",
          code: 409,
          message: 'ippools.whereabouts.cni.cncf.io "c-dup" already exists',
          details: { name: "c-dup", group: "whereabouts.cni.cncf.io", kind: "ippools" },
        });
      });

      it("answers 422 Invalid for a name that is not a DNS-1123 subdomain", async () => {
        for (const name of ["Upper", "under_score", "-dash", "dot.", "x".repeat(254)]) {
          const { code, status } = await failure(create(name));
          expect(code).toBe(422);
          expect(status.reason).toBe("Invalid");
          expect(status.details?.kind).toBe("IPPool");
          expect(status.details?.causes?.[0]).toMatchObject({ reason: "FieldValueInvalid", field: "metadata.name" });
          expect(status.message).toMatch(/^IPPool\.whereabouts\.cni\.cncf\.io ".*" is invalid: metadata\.name: Invalid value/);
        }
      });

      it("answers 422 when there is neither a name nor a generateName", async () => {
        const { code, status } = await failure(
          h.custom.createNamespacedCustomObject({ ...ippools(), body: { ...ippool(""), metadata: {} } }),
        );
        expect(code).toBe(422);
        expect(status.message).toContain("metadata.name: Required value: name or generateName is required");
      });

      it("picks name = generateName + 5 random characters", async () => {
        const a = metadataOf(
          await h.custom.createNamespacedCustomObject({ ...ippools(), body: { ...ippool(""), metadata: { generateName: "gen-" } } }),
        );
        const b = metadataOf(
          await h.custom.createNamespacedCustomObject({ ...ippools(), body: { ...ippool(""), metadata: { generateName: "gen-" } } }),
        );
        expect(a.name).toMatch(/^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
        expect(a.name).not.toBe(b.name);
        expect(a.generateName).toBe("gen-");
      });

      it("refuses a resourceVersion on create with the API server's 500", async () => {
        const { code, status } = await failure(create("c-rv", { metadata: { resourceVersion: "5" } }));
        expect(code).toBe(500);
        expect(status.message).toBe("resourceVersion should not be set on objects to be created");
      });

      it("answers 400 for an apiVersion that does not match the URL, 422 for another kind", async () => {
        const wrongVersion = await failure(
          h.custom.createNamespacedCustomObject({ ...ippools(), body: { ...ippool("c-av"), apiVersion: "v1" } }),
        );
        expect(wrongVersion.code).toBe(400);
        expect(wrongVersion.status.message).toContain("does not match the expected API version");
        const wrongKind = await failure(
          h.custom.createNamespacedCustomObject({ ...ippools(), body: { ...ippool("c-k"), kind: "NodeSlicePool" } }),
        );
        expect(wrongKind.code).toBe(422);
        expect(wrongKind.status).toMatchObject({
          reason: "Invalid",
          message: 'NodeSlicePool.whereabouts.cni.cncf.io "c-k" is invalid: kind: Invalid value: "NodeSlicePool": must be IPPool',
          details: {
            name: "c-k",
            group: "whereabouts.cni.cncf.io",
            kind: "NodeSlicePool",
            causes: [{ reason: "FieldValueInvalid", message: 'Invalid value: "NodeSlicePool": must be IPPool', field: "kind" }],
          },
        });
        const noKind = await failure(h.custom.createNamespacedCustomObject({ ...ippools(), body: { ...ippool("c-nk"), kind: undefined } }));
        expect(noKind.status.message).toContain("Object 'Kind' is missing");
      });

      it("answers 400 when the body's namespace differs from the URL's", async () => {
        const { code, status } = await failure(create("c-ns", { metadata: { namespace: "other" } }));
        expect(code).toBe(400);
        expect(status.message).toBe("the namespace of the provided object does not match the namespace sent on the request");
      });

      it("treats every valid namespace as existing and answers 404 for an impossible one", async () => {
        await h.custom.createNamespacedCustomObject({ ...ippools("fresh-namespace"), body: ippool("c-anywhere") });
        const { code, status } = await failure(h.custom.createNamespacedCustomObject({ ...ippools("Bad_NS"), body: ippool("c-bad-ns") }));
        expect(code).toBe(404);
        expect(status.message).toBe('namespaces "Bad_NS" not found');
      });

      it("prunes fields the CRD schema does not declare, with a Warning header; fieldValidation=Strict refuses them", async () => {
        const body = ippool("c-prune", { spec: { range: "10.0.0.0/24", allocations: {}, extra: 1 }, status: { x: 1 } });
        const created = await raw(h, "POST", PATH, body);
        expect(created.status).toBe(201);
        expect(created.body).toMatchObject({ spec: { range: "10.0.0.0/24", allocations: {} } });
        expect((created.body as { spec: object }).spec).not.toHaveProperty("extra");
        expect(created.body).not.toHaveProperty("status");
        expect(created.headers.get("warning")).toContain('unknown field \\"spec.extra\\"');
        const strict = await raw(h, "POST", `${PATH}?fieldValidation=Strict`, { ...body, metadata: { name: "c-strict" } });
        expect(strict.status).toBe(400);
        expect((strict.body as { message: string }).message).toContain('unknown field "spec.extra"');
      });

      it("validates types and required fields against the CRD schema (422)", async () => {
        const wrongType = await failure(create("c-type", { spec: { range: 24, allocations: {} } }));
        expect(wrongType.code).toBe(422);
        expect(wrongType.status.message).toContain(
          'spec.range: Invalid value: "integer": spec.range in body must be of type string: "integer"',
        );
        const missing = await failure(create("c-req", { spec: { allocations: { "1": { id: "c1" } } } }));
        expect(missing.status.message).toContain("spec.range: Required value");
        expect(missing.status.message).toContain("spec.allocations.1.podref: Required value");
      });

      it("reports every type error as FieldValueTypeInvalid (in no fixed order on the real server)", async () => {
        const { status } = await failure(create("c-types", { spec: { range: 5, allocations: { "1": { id: 1, podref: "a/b" } } } }));
        expect(status.message).toMatch(/^IPPool\.whereabouts\.cni\.cncf\.io "c-types" is invalid: \[.*\]$/);
        expect(status.message).toContain('spec.range: Invalid value: "integer": spec.range in body must be of type string: "integer"');
        expect(status.message).toContain(
          'spec.allocations.1.id: Invalid value: "integer": spec.allocations.1.id in body must be of type string: "integer"',
        );
        expect(status.details?.causes?.map((c) => `${c.reason} ${c.field}`).sort()).toEqual([
          "FieldValueTypeInvalid spec.allocations.1.id",
          "FieldValueTypeInvalid spec.range",
        ]);
      });

      it("prunes what manifests/crds.yaml does not declare: an ORIP's ipamclaimref, an IPPool's status; warnings sorted", async () => {
        const orip = await raw(h, "POST", `/apis/${API_VERSION}/namespaces/${NS}/overlappingrangeipreservations`, {
          apiVersion: API_VERSION,
          kind: "OverlappingRangeIPReservation",
          metadata: { name: "10.0.0.201" },
          spec: { podref: "a/b", ipamclaimref: "claim" },
        });
        expect(orip.status).toBe(201);
        expect(orip.headers.get("warning")).toBe('299 - "unknown field \\"spec.ipamclaimref\\""');
        expect((orip.body as { spec: object }).spec).toEqual({ podref: "a/b" });
        const pool = await raw(h, "POST", PATH, {
          ...ippool("c-prune-2"),
          status: { x: 1 },
          spec: { range: "10.0.0.0/24", allocations: {}, zz: 1 },
        });
        expect(pool.status, JSON.stringify(pool.body)).toBe(201);
        expect(pool.headers.get("warning")).toBe('299 - "unknown field \\"spec.zz\\"", 299 - "unknown field \\"status\\""');
        expect(pool.body).not.toHaveProperty("status");
      });

      it("uses one resourceVersion counter for every kind, strictly increasing", async () => {
        const rvs = [
          rvOf(await create("c-rv-1")),
          rvOf(await h.core.createNamespacedPod({ namespace: NS, body: pod("c-rv-pod") })),
          rvOf(await h.coordination.createNamespacedLease({ namespace: NS, body: { metadata: { name: "c-rv-lease" } } })),
          rvOf(
            await h.custom.createNamespacedCustomObject({
              group: "whereabouts.cni.cncf.io",
              version: "v1alpha1",
              namespace: NS,
              plural: "overlappingrangeipreservations",
              body: {
                apiVersion: API_VERSION,
                kind: "OverlappingRangeIPReservation",
                metadata: { name: "10.0.0.1" },
                spec: { podref: "ns/p" },
              },
            }),
          ),
        ].map(Number);
        for (let i = 1; i < rvs.length; i++) expect(rvs[i]).toBe((rvs[i - 1] ?? 0) + 1);
        const list = (await h.custom.listNamespacedCustomObject(ippools())) as { metadata: { resourceVersion: string } };
        expect(Number(list.metadata.resourceVersion)).toBe(rvs[3]);
      });
    });
  });
}
