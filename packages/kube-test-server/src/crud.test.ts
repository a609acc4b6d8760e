import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

    const create = (name: string, extra = {}) => h.custom.createNamespacedCustomObject({ ...ippools(), body: ippool(name, extra) });
    const get = (name: string) => h.custom.getNamespacedCustomObject({ ...ippools(), name });
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

    describe("get", () => {
      it("answers 404 NotFound with a Status body", async () => {
        const { code, status } = await failure(get("missing"));
        expect(code).toBe(404);
        expect(status).toEqual({
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          message: 'ippools.whereabouts.cni.cncf.io "missing" not found',
          reason: "NotFound",
          details: { name: "missing", group: "whereabouts.cni.cncf.io", kind: "ippools" },
          code: 404,
        });
      });
    });

    describe("replace (PUT)", () => {
      const replace = (name: string, body: object) => h.custom.replaceNamespacedCustomObject({ ...ippools(), name, body });

      it("answers 409 Conflict with the API server's message for a stale resourceVersion", async () => {
        const created = await create("u-stale");
        await replace("u-stale", { ...(created as object), spec: { range: "10.0.1.0/24", allocations: {} } });
        const { code, status } = await failure(
          replace("u-stale", { ...(created as object), spec: { range: "10.0.2.0/24", allocations: {} } }),
        );
        expect(code).toBe(409);
        expect(status).toMatchObject({
          reason: "Conflict",
          message:
            'Operation cannot be fulfilled on ippools.whereabouts.cni.cncf.io "u-stale": the object has been modified; please apply your changes to the latest version and try again',
          details: { name: "u-stale", group: "whereabouts.cni.cncf.io", kind: "ippools" },
        });
        expect((await get("u-stale")) as object).toMatchObject({ spec: { range: "10.0.1.0/24" } });
      });

      it("answers 422 for a custom resource PUT without resourceVersion", async () => {
        await create("u-norv");
        const { code, status } = await failure(replace("u-norv", ippool("u-norv")));
        expect(code).toBe(422);
        expect(status.message).toBe(
          'ippools.whereabouts.cni.cncf.io "u-norv" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update',
        );
      });

      it("answers 404 for a missing object (custom resources cannot be created by PUT)", async () => {
        const { code } = await failure(replace("u-missing", ippool("u-missing", { metadata: { resourceVersion: "1" } })));
        expect(code).toBe(404);
      });

      it("keeps uid and creationTimestamp, bumps generation only when more than metadata changes", async () => {
        const created = metadataOf(await create("u-gen"));
        const relabelled = metadataOf(
          await replace(
            "u-gen",
            ippool("u-gen", {
              metadata: { resourceVersion: created.resourceVersion, labels: { a: "b" }, creationTimestamp: "2000-01-01T00:00:00Z" },
            }),
          ),
        );
        expect(relabelled).toMatchObject({
          uid: created.uid,
          creationTimestamp: created.creationTimestamp,
          generation: 1,
          labels: { a: "b" },
        });
        const respecced = metadataOf(
          await replace(
            "u-gen",
            ippool("u-gen", {
              metadata: { resourceVersion: relabelled.resourceVersion, labels: { a: "b" } },
              spec: { range: "10.9.0.0/16", allocations: {} },
            }),
          ),
        );
        expect(respecced.generation).toBe(2);
        expect(Number(respecced.resourceVersion)).toBeGreaterThan(Number(relabelled.resourceVersion));
      });

      it("writes nothing for an update that changes nothing: same resourceVersion", async () => {
        const created = await create("u-noop");
        const again = await replace("u-noop", created as object);
        expect(rvOf(again)).toBe(rvOf(created));
      });

      it("answers 409 for a uid that is not the stored object's (a precondition)", async () => {
        const created = await create("u-uid");
        const stale = { ...(created as object), metadata: { ...metadataOf(created), uid: "00000000-0000-4000-8000-000000000000" } };
        const { code, status } = await failure(replace("u-uid", stale));
        expect(code).toBe(409);
        expect(status.message).toContain("Precondition failed: UID in precondition: 00000000-0000-4000-8000-000000000000");
      });

      it("answers 400 when the body's name differs from the URL's", async () => {
        const created = await create("u-name");
        const { code, status } = await failure(
          replace("u-name", { ...(created as object), metadata: { ...metadataOf(created), name: "other" } }),
        );
        expect(code).toBe(400);
        expect(status.message).toBe("the name of the object (other) does not match the name on the URL (u-name)");
      });
    });

    describe("delete", () => {
      const remove = (name: string, body?: object) =>
        h.custom.deleteNamespacedCustomObject({ ...ippools(), name, ...(body === undefined ? {} : { body }) });

      it("answers a Success Status naming the deleted object; the object is gone", async () => {
        const created = await create("d-plain");
        const deleted = await remove("d-plain");
        expect(deleted).toEqual({
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Success",
          details: { name: "d-plain", group: "whereabouts.cni.cncf.io", kind: "ippools", uid: metadataOf(created).uid },
        });
        expect((await failure(get("d-plain"))).code).toBe(404);
        expect((await failure(remove("d-plain"))).code).toBe(404);
      });

      it("honours preconditions.resourceVersion and preconditions.uid (409 on mismatch)", async () => {
        const created = metadataOf(await create("d-pre"));
        const staleRv = await failure(remove("d-pre", { preconditions: { resourceVersion: "1" } }));
        expect(staleRv.code).toBe(409);
        expect(staleRv.status).toMatchObject({
          reason: "Conflict",
          message: `Operation cannot be fulfilled on IPPool.whereabouts.cni.cncf.io "d-pre": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (${created.resourceVersion}). The object might have been modified`,
          details: { name: "d-pre", group: "whereabouts.cni.cncf.io", kind: "IPPool" },
        });
        const staleUid = await failure(remove("d-pre", { preconditions: { uid: "00000000-0000-4000-8000-000000000000" } }));
        expect(staleUid.code).toBe(409);
        expect(staleUid.status.reason).toBe("Conflict");
        expect(staleUid.status.message).toBe(
          `Operation cannot be fulfilled on IPPool.whereabouts.cni.cncf.io "d-pre": the UID in the precondition (00000000-0000-4000-8000-000000000000) does not match the UID in record (${created.uid}). The object might have been deleted and then recreated`,
        );
        await remove("d-pre", { preconditions: { resourceVersion: created.resourceVersion, uid: created.uid } });
        expect((await failure(get("d-pre"))).code).toBe(404);
      });

      it("keeps an object with finalizers, marked deleting, until an update removes the last one", async () => {
        const created = await create("d-fin", { metadata: { finalizers: ["example.com/hold"] } });
        const marked = metadataOf(await remove("d-fin"));
        expect(marked.deletionTimestamp).toMatch(/Z$/);
        expect(marked.deletionGracePeriodSeconds).toBe(0);
        expect(marked.generation).toBe(2);
        const current = await get("d-fin");
        const added = await failure(
          h.custom.replaceNamespacedCustomObject({
            ...ippools(),
            name: "d-fin",
            body: { ...(current as object), metadata: { ...metadataOf(current), finalizers: ["example.com/hold", "example.com/more"] } },
          }),
        );
        expect(added.code).toBe(422);
        await h.custom.replaceNamespacedCustomObject({
          ...ippools(),
          name: "d-fin",
          body: { ...(current as object), metadata: { ...metadataOf(current), finalizers: [] } },
        });
        expect((await failure(get("d-fin"))).code).toBe(404);
        expect(created).toBeDefined();
      });
    });
  });
}
