import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  API_VERSION,
  type CollectedWatch,
  collect,
  type Harness,
  harnessTargets,
  ippool,
  ippools,
  metadataOf,
  raw,
  rvOf,
} from "./test-support.js";

for (const target of harnessTargets({ historyEvents: 20, bookmarkIntervalMs: 20 })) {
  describe(`watch on ${target.name}`, () => {
    let h: Harness;
    const open: CollectedWatch[] = [];
    beforeAll(async () => {
      h = await target.start();
    });
    afterAll(async () => {
      for (const w of open) w.abort();
      await h?.close();
    });

    const path = (namespace: string) => `/apis/${API_VERSION}/namespaces/${namespace}/ippools`;
    const create = (namespace: string, name: string, labels: Record<string, string> = {}) =>
      h.custom.createNamespacedCustomObject({ ...ippools(namespace), body: ippool(name, { metadata: { labels } }) });
    const relabel = async (namespace: string, name: string, labels: Record<string, string>) => {
      const current = await h.custom.getNamespacedCustomObject({ ...ippools(namespace), name });
      return h.custom.replaceNamespacedCustomObject({
        ...ippools(namespace),
        name,
        body: { ...(current as object), metadata: { ...metadataOf(current), labels } },
      });
    };
    const watch = async (p: string, query: Record<string, string | number | boolean>) => {
      const w = await collect(h.watch, p, query);
      open.push(w);
      return w;
    };
    const summary = (w: CollectedWatch) =>
      w.events.filter((e) => e.type !== "BOOKMARK").map((e) => `${e.type} ${String(metadataOf(e.object).name)}`);

    describe("watch", () => {
      it("from a resourceVersion: only the writes after it, in order, with their resourceVersions", async () => {
        const first = await create("w-rv", "one");
        await create("w-rv", "two");
        const w = await watch(path("w-rv"), { resourceVersion: rvOf(first) });
        await relabel("w-rv", "one", { a: "b" });
        await h.custom.deleteNamespacedCustomObject({ ...ippools("w-rv"), name: "two" });
        const after = await h.custom.listNamespacedCustomObject({ ...ippools("w-rv") });
        await w.until((events) => events.length >= 3);
        expect(summary(w)).toEqual(["ADDED two", "MODIFIED one", "DELETED two"]);
        // the DELETED event carries the deletion's resourceVersion: after the MODIFIED one, not after the list's
        expect(Number(rvOf(w.events[2]?.object))).toBeGreaterThan(Number(rvOf(w.events[1]?.object)));
        expect(Number(rvOf(w.events[2]?.object))).toBeLessThanOrEqual(Number(rvOf(after)));
        const rvs = w.events.map((e) => Number(rvOf(e.object)));
        expect([...rvs].sort((a, b) => a - b)).toEqual(rvs);
      });

      it("resourceVersion 0 (or none): synthetic ADDED for what exists, then live events", async () => {
        await create("w-zero", "existing");
        const w = await watch(path("w-zero"), { resourceVersion: "0" });
        await create("w-zero", "later");
        await w.until((events) => events.length >= 2);
        expect(summary(w)).toEqual(["ADDED existing", "ADDED later"]);
      });

      it("applies the label selector, turning objects that enter or leave it into ADDED/DELETED", async () => {
        await create("w-label", "x", { app: "a" });
        const w = await watch(path("w-label"), { labelSelector: "app=a" });
        await create("w-label", "y", { app: "b" });
        await relabel("w-label", "y", { app: "a" });
        await relabel("w-label", "x", { app: "c" });
        await relabel("w-label", "y", { app: "a", more: "1" });
        await w.until((events) => events.length >= 4);
        expect(summary(w)).toEqual(["ADDED x", "ADDED y", "DELETED x", "MODIFIED y"]);
      });

      it("applies field selectors and namespaces; an all-namespaces watch sees every namespace", async () => {
        const all = await watch(`/apis/${API_VERSION}/ippools`, { fieldSelector: "metadata.name=target" });
        const one = await watch(path("w-ns-a"), {});
        await create("w-ns-b", "target");
        await create("w-ns-a", "other");
        await create("w-ns-a", "target");
        await all.until((events) => events.length >= 2);
        await one.until((events) => events.length >= 2);
        expect(all.events.map((e) => `${String(metadataOf(e.object).namespace)}/${String(metadataOf(e.object).name)}`)).toEqual([
          "w-ns-b/target",
          "w-ns-a/target",
        ]);
        expect(summary(one)).toEqual(["ADDED other", "ADDED target"]);
      });

      // the stand-in keeps a window of writes (historyEvents); a real server's watch cache and etcd
      // compaction are not pushed past in a test's time
      if (target.standIn)
        it("sends an ERROR event with a 410 Expired Status for a resourceVersion older than the history", async () => {
          const first = await create("w-old", "first");
          for (let i = 0; i < 25; i++) await create("w-old", `n${i}`);
          const w = await watch(path("w-old"), { resourceVersion: rvOf(first) });
          await w.done;
          expect(w.events).toHaveLength(1);
          expect(w.events[0]).toMatchObject({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired", status: "Failure" } });
        });

      it("sends BOOKMARK events carrying only the current resourceVersion when asked, the first marking the initial events' end", async () => {
        await create("w-bookmark", "b0");
        // A real kube-apiserver schedules periodic bookmarks once a minute, or by the watch's deadline
        // if that is sooner (cacher's nextBookmarkTime): without timeoutSeconds the second bookmark
        // sometimes came after the test's 30 s limit (1 of 2 runs); with a 10 s watch it came after
        // ~2 s in each of 8 runs.
        const w = await watch(path("w-bookmark"), { allowWatchBookmarks: true, timeoutSeconds: 10 });
        await w.until((events) => events.some((e) => e.type === "BOOKMARK"));
        expect(w.events.slice(0, 2).map((e) => e.type)).toEqual(["ADDED", "BOOKMARK"]);
        expect(w.events[1]?.object).toEqual({
          kind: "IPPool",
          apiVersion: API_VERSION,
          metadata: { annotations: { "k8s.io/initial-events-end": "true" }, resourceVersion: expect.stringMatching(/^\d+$/) },
        });
        const created = await create("w-bookmark", "b1");
        await w.until((events) => events.some((e) => e.type === "BOOKMARK" && Number(rvOf(e.object)) >= Number(rvOf(created))));
        const bookmark = w.events.slice(2).find((e) => e.type === "BOOKMARK");
        expect(bookmark?.object).toEqual({
          kind: "IPPool",
          apiVersion: API_VERSION,
          metadata: { resourceVersion: expect.stringMatching(/^\d+$/) },
        });
      });

      it("ignores watch=1 on a single object's URL (a plain GET); a watch on one object selects metadata.name", async () => {
        await create("w-item", "mine");
        await create("w-item", "theirs");
        const response = await raw(h, "GET", `${path("w-item")}/mine?watch=1&timeoutSeconds=1`);
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({ kind: "IPPool", metadata: { name: "mine" } });
        const w = await watch(path("w-item"), { fieldSelector: "metadata.name=mine" });
        await w.until((events) => events.length >= 1);
        await create("w-item", "third");
        await relabel("w-item", "mine", { x: "y" });
        await w.until((events) => events.length >= 2);
        expect(summary(w)).toEqual(["ADDED mine", "MODIFIED mine"]);
      });

      it("ends after timeoutSeconds, and when the server closes", async () => {
        const timed = await watch(path("w-timeout"), { timeoutSeconds: 1 });
        expect(await timed.done).toBeNull();
        const server = await import("./server.js").then((m) => m.startKubeTestServer());
        const { KubeConfig, Watch } = await import("@kubernetes/client-node");
        const config = new KubeConfig();
        config.loadFromString(server.kubeconfig());
        const w = await collect(new Watch(config), path("w-close"), {});
        await server.close();
        expect(await w.done).toBeNull();
      });
    });
  });
}
