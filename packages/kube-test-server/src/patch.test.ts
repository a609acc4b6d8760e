import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_VERSION, failure, type Harness, harnessTargets, ippool, ippools, metadataOf, NS, raw, rvOf } from "./test-support.js";

for (const target of harnessTargets()) {
  describe(`patch on ${target.name}`, () => {
    let h: Harness;
    beforeAll(async () => {
      h = await target.start();
    });
    afterAll(async () => {
      await h?.close();
    });

    const create = (name: string) => h.custom.createNamespacedCustomObject({ ...ippools(), body: ippool(name) });
    const get = (name: string) => h.custom.getNamespacedCustomObject({ ...ippools(), name });
    /** client-node's default for patchNamespacedCustomObject: application/json-patch+json. */
    const jsonPatch = (name: string, body: object[]) => h.custom.patchNamespacedCustomObject({ ...ippools(), name, body });
    const mergePatch = (name: string, body: object) =>
      h.custom.patchNamespacedCustomObject({ ...ippools(), name, body }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
    const path = (name: string) => `/apis/${API_VERSION}/namespaces/${NS}/ippools/${name}`;

    describe("JSON merge patch", () => {
      it("merges (RFC 7386: null deletes) and bumps resourceVersion and generation", async () => {
        const created = await create("m-merge");
        const patched = await mergePatch("m-merge", {
          metadata: { labels: { a: "1" } },
          spec: { allocations: { "5": { id: "c5", podref: "ns/p5" } } },
        });
        expect(patched).toMatchObject({
          metadata: { labels: { a: "1" }, generation: 2 },
          spec: { range: "10.0.0.0/24", allocations: { "5": { id: "c5" } } },
        });
        expect(Number(rvOf(patched))).toBeGreaterThan(Number(rvOf(created)));
        const removed = await mergePatch("m-merge", { spec: { allocations: { "5": null } } });
        expect((removed as { spec: { allocations: object } }).spec.allocations).toEqual({});
      });

      it("treats metadata.resourceVersion in the patch as a precondition (409 when stale)", async () => {
        const created = await create("m-rv");
        await mergePatch("m-rv", { metadata: { resourceVersion: rvOf(created) }, spec: { range: "10.1.0.0/24" } });
        const { code, status } = await failure(
          mergePatch("m-rv", { metadata: { resourceVersion: rvOf(created) }, spec: { range: "10.2.0.0/24" } }),
        );
        expect(code).toBe(409);
        expect(status.reason).toBe("Conflict");
        expect(await get("m-rv")).toMatchObject({ spec: { range: "10.1.0.0/24" } });
      });

      it("answers 404 for a missing object", async () => {
        expect((await failure(mergePatch("m-missing", { metadata: { labels: { a: "1" } } }))).code).toBe(404);
      });
    });

    describe("JSON patch", () => {
      it("applies operations, with a passing test op", async () => {
        const created = await create("j-pass");
        const patched = await jsonPatch("j-pass", [
          { op: "test", path: "/metadata/resourceVersion", value: rvOf(created) },
          { op: "add", path: "/spec/allocations/7", value: { id: "c7", podref: "ns/p7" } },
        ]);
        expect(patched).toMatchObject({ spec: { allocations: { "7": { id: "c7", podref: "ns/p7" } } } });
      });

      it("answers a failing test op with the API server's bare 422 and leaves the object unchanged", async () => {
        const created = await create("j-fail");
        const { code, status } = await failure(
          jsonPatch("j-fail", [
            { op: "test", path: "/spec/range", value: "192.168.0.0/16" },
            { op: "replace", path: "/spec/range", value: "10.9.9.0/24" },
          ]),
        );
        expect(code).toBe(422);
        expect(status).toMatchObject({
          reason: "Invalid",
          message: "the server rejected our request due to an error in our request",
          details: {},
        });
        expect(await get("j-fail")).toEqual(created);
      });

      it("answers 422 for a remove or replace of a path that does not exist", async () => {
        await create("j-path");
        expect((await failure(jsonPatch("j-path", [{ op: "remove", path: "/spec/nothing" }]))).code).toBe(422);
        expect((await failure(jsonPatch("j-path", [{ op: "replace", path: "/spec/allocations/9/id", value: "x" }]))).code).toBe(422);
      });

      it("answers 400 for a patch that is not a list of operations", async () => {
        await create("j-shape");
        const response = await raw(h, "PATCH", path("j-shape"), { op: "add" }, { "content-type": "application/json-patch+json" });
        expect(response.status).toBe(400);
      });
    });

    describe("patch rules", () => {
      it("answers 415 to a strategic merge patch on a custom resource, and to unknown content types", async () => {
        await create("p-415");
        const smp = await failure(
          h.custom.patchNamespacedCustomObject(
            { ...ippools(), name: "p-415", body: { metadata: { labels: { a: "1" } } } },
            setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
          ),
        );
        expect(smp.code).toBe(415);
        expect(smp.status.reason).toBe("UnsupportedMediaType");
        const text = await raw(h, "PATCH", path("p-415"), "{}", { "content-type": "text/plain" });
        expect(text.status).toBe(415);
        expect(text.body).toMatchObject({
          message:
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        });
        // server-side apply: kube-apiserver applies it (here 400: "{}" names no kind); the stand-in does
        // not implement it and says so with 415 (README, known differences)
        const apply = await raw(h, "PATCH", `${path("p-415")}?fieldManager=t`, "{}", { "content-type": "application/apply-patch+yaml" });
        expect(apply.status).toBe(target.standIn ? 415 : 400);
      });

      it("keeps server-owned metadata: changing the name is 400, the uid 422, creationTimestamp is ignored", async () => {
        const created = metadataOf(await create("p-owned"));
        expect((await failure(mergePatch("p-owned", { metadata: { name: "other" } }))).code).toBe(400);
        const uid = await failure(mergePatch("p-owned", { metadata: { uid: "00000000-0000-4000-8000-000000000000" } }));
        expect(uid.code).toBe(422);
        expect(uid.status.message).toContain("metadata.uid: Invalid value");
        const stamped = metadataOf(
          await mergePatch("p-owned", { metadata: { creationTimestamp: "2001-01-01T00:00:00Z", labels: { x: "y" } } }),
        );
        expect(stamped.creationTimestamp).toBe(created.creationTimestamp);
        expect((await failure(mergePatch("p-owned", { metadata: { namespace: "elsewhere" } }))).code).toBe(400);
      });

      it("validates the patched object against the schema (422)", async () => {
        await create("p-schema");
        const { code, status } = await failure(mergePatch("p-schema", { spec: { range: null } }));
        expect(code).toBe(422);
        expect(status.message).toContain("spec.range: Required value");
      });
    });
  });
}
