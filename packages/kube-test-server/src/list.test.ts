import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_VERSION, failure, GROUP, type Harness, harnessTargets, ippool, ippools, metadataOf, raw, VERSION } from "./test-support.js";

for (const target of harnessTargets({ historyEvents: 50 })) {
  describe(`list on ${target.name}`, () => {
    interface List {
      apiVersion: string;
      kind: string;
      metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
      items: { apiVersion?: string; kind?: string; metadata: { name: string; namespace: string; resourceVersion: string } }[];
    }

    let h: Harness;
    const LABELS: Record<string, Record<string, string>> = {
      a: { tier: "web", env: "prod" },
      b: { tier: "db", env: "prod" },
      c: { tier: "web", env: "dev", canary: "true" },
      d: { tier: "cache" },
      e: {},
    };

    beforeAll(async () => {
      h = await target.start();
      for (const [name, labels] of Object.entries(LABELS))
        await h.custom.createNamespacedCustomObject({ ...ippools("sel"), body: ippool(name, { metadata: { labels } }) });
    });
    afterAll(async () => {
      await h?.close();
    });

    const list = async (query: { labelSelector?: string; fieldSelector?: string; limit?: number; _continue?: string }, namespace = "sel") =>
      (await h.custom.listNamespacedCustomObject({ ...ippools(namespace), ...query })) as List;
    const names = (l: List) => l.items.map((i) => i.metadata.name);

    describe("list", () => {
      it("is a <Kind>List whose items carry apiVersion and kind", async () => {
        const l = await list({});
        expect(l.apiVersion).toBe(API_VERSION);
        expect(l.kind).toBe("IPPoolList");
        expect(l.metadata.resourceVersion).toMatch(/^\d+$/);
        expect(l.metadata.continue).toBe(""); // a custom resource list always carries continue
        expect(names(l)).toEqual(["a", "b", "c", "d", "e"]);
        for (const item of l.items) expect(item).toMatchObject({ apiVersion: API_VERSION, kind: "IPPool" });
      });

      it.each([
        ["tier=web", ["a", "c"]],
        ["tier==web", ["a", "c"]],
        ["tier!=web", ["b", "d", "e"]],
        ["tier in (web, db)", ["a", "b", "c"]],
        ["tier notin (web,db)", ["d", "e"]],
        ["canary", ["c"]],
        ["!canary", ["a", "b", "d", "e"]],
        ["env=prod,tier=db", ["b"]],
        ["tier,!env", ["d"]],
        ["", ["a", "b", "c", "d", "e"]],
      ])("label selector %j", async (labelSelector, expected) => {
        expect(names(await list({ labelSelector }))).toEqual(expected);
      });

      it("accepts an empty value set: `in ()` selects nothing, `notin ()` everything", async () => {
        expect(names(await list({ labelSelector: "tier in ()" }))).toEqual([]);
        expect(names(await list({ labelSelector: "tier notin ()" }))).toEqual(["a", "b", "c", "d", "e"]);
      });

      it("words selector syntax errors as the API server does", async () => {
        const message = async (labelSelector: string) => (await failure(list({ labelSelector }))).status.message;
        expect(await message("tier in web")).toBe("unable to parse requirement: found 'web' expected: '('");
        expect(await message("tier=a b")).toBe("found 'b', expected: ',' or 'end of string'");
        expect(await message("a,")).toBe("found '', expected: identifier after ','");
        expect(await message("x,,y")).toBe("found ',', expected: identifier after ','");
        expect(await message("tier in (a b)")).toBe("unable to parse requirement: found 'b', expected: ',' or ')'");
        expect(await message("tier in (a")).toBe("unable to parse requirement: found '', expected: ',' or ')'");
        expect(await message("tier ~ x")).toBe("unable to parse requirement: found '~', expected: in, notin, =, ==, !=, gt, lt");
      });

      it("answers 400 for a malformed label selector", async () => {
        for (const labelSelector of ["tier in web", "tier=a b", "Bad Key=1", "a,", "x,,y", "tier in (a b)"]) {
          const { code, status } = await failure(list({ labelSelector }));
          expect(code).toBe(400);
          expect(status.reason).toBe("BadRequest");
        }
      });

      it.each([
        ["metadata.name=b", ["b"]],
        ["metadata.name==b", ["b"]],
        ["metadata.name!=b", ["a", "c", "d", "e"]],
        ["metadata.namespace=sel,metadata.name!=a", ["b", "c", "d", "e"]],
        ["metadata.namespace=elsewhere", []],
      ])("field selector %j", async (fieldSelector, expected) => {
        expect(names(await list({ fieldSelector }))).toEqual(expected);
      });

      it("answers 400 for a field selector the kind does not support", async () => {
        const { code, status } = await failure(list({ fieldSelector: "spec.range=10.0.0.0/24" }));
        expect(code).toBe(400);
        expect(status.message).toBe("field label not supported: spec.range");
        expect((await failure(list({ fieldSelector: "nonsense" }))).code).toBe(400);
      });

      it("lists across namespaces in key order (namespace/name)", async () => {
        await h.custom.createNamespacedCustomObject({ ...ippools("other"), body: ippool("a") });
        const all = (await h.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: "ippools" })) as List;
        expect(all.items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`)).toEqual([
          "other/a",
          "sel/a",
          "sel/b",
          "sel/c",
          "sel/d",
          "sel/e",
        ]);
      });
    });

    describe("pagination", () => {
      it("pages with limit/continue over one consistent snapshot", async () => {
        const first = await list({ limit: 2 });
        expect(names(first)).toEqual(["a", "b"]);
        expect(first.metadata.remainingItemCount).toBe(3);
        const token = first.metadata.continue;
        expect(token).toMatch(/^[A-Za-z0-9_-]+$/);

        // Writes after the first page do not show in the next pages (the real server reads etcd at the first page's revision).
        const c = await h.custom.getNamespacedCustomObject({ ...ippools("sel"), name: "c" });
        await h.custom.replaceNamespacedCustomObject({
          ...ippools("sel"),
          name: "c",
          body: { ...(c as object), metadata: { ...metadataOf(c), labels: { changed: "yes" } } },
        });
        await h.custom.deleteNamespacedCustomObject({ ...ippools("sel"), name: "d" });
        await h.custom.createNamespacedCustomObject({ ...ippools("sel"), body: ippool("bb") });

        const second = await list({ limit: 2, ...(token === undefined ? {} : { _continue: token }) });
        expect(names(second)).toEqual(["c", "d"]);
        expect(second.items[0]?.metadata).not.toHaveProperty("labels.changed");
        expect(second.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
        const third = await list({ limit: 2, _continue: second.metadata.continue ?? "" });
        expect(names(third)).toEqual(["e"]);
        expect(third.metadata.continue).toBe("");

        // A fresh list sees the writes.
        expect(names(await list({}))).toEqual(["a", "b", "bb", "c", "e"]);
      });

      it("pages selected objects without remainingItemCount", async () => {
        const first = await list({ limit: 1, labelSelector: "env" });
        expect(first.metadata.remainingItemCount).toBeUndefined();
        expect(names(first)).toEqual(["a"]);
        const rest = await list({ limit: 5, labelSelector: "env", _continue: first.metadata.continue ?? "" });
        expect(names(rest)).toEqual(["b"]);
      });

      // the stand-in's history is a window of writes (historyEvents); a real server's is etcd's compaction
      // (every 5 min by default), so only the stand-in can be pushed past it here
      if (target.standIn)
        it("answers 410 Expired with a fresh continue token once the snapshot is compacted away", async () => {
          const first = await list({ limit: 1 });
          for (let i = 0; i < 60; i++) await h.custom.createNamespacedCustomObject({ ...ippools("churn"), body: ippool(`x${i}`) });
          const expired = await failure(list({ limit: 1, _continue: first.metadata.continue ?? "" }));
          expect(expired.code).toBe(410);
          expect(expired.status.reason).toBe("Expired");
          const fresh = expired.status.metadata.continue ?? "";
          expect(fresh).not.toBe("");
          expect(names(await list({ limit: 1, _continue: fresh }))).toEqual(["b"]);
        });

      it("refuses continue with a resourceVersion, and a continue token it did not make", async () => {
        const first = await list({ limit: 1 });
        const path = `/apis/${API_VERSION}/namespaces/sel/ippools?limit=1&resourceVersion=3&continue=${first.metadata.continue}`;
        expect((await raw(h, "GET", path)).status).toBe(400);
        expect((await failure(list({ limit: 1, _continue: "garbage" }))).code).toBe(400);
      });

      it("answers 504 for a resourceVersion newer than the server's", async () => {
        const response = await raw(h, "GET", `/apis/${API_VERSION}/namespaces/sel/ippools?resourceVersion=999999`);
        expect(response.status).toBe(504);
        expect(response.body).toMatchObject({ reason: "Timeout", details: { causes: [{ reason: "ResourceVersionTooLarge" }] } });
      });
    });
  });
}
