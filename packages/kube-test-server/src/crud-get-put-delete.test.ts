import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ippoolCalls } from "./crud-support.js";
import { failure, type Harness, harnessTargets, ippool, ippools, metadataOf, rvOf } from "./test-support.js";

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
