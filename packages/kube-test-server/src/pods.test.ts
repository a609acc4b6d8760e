import { PatchStrategy, setHeaderOptions, type V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failure, type Harness, harnessTargets, NS, pod, raw } from "./test-support.js";

for (const target of harnessTargets()) {
  describe(`pods on ${target.name}`, () => {
    let h: Harness;
    beforeAll(async () => {
      h = await target.start();
    });
    afterAll(async () => {
      await h?.close();
    });

    const create = (name: string, extra = {}, namespace = NS) => h.core.createNamespacedPod({ namespace, body: pod(name, extra) as V1Pod });
    const read = (name: string) => h.core.readNamespacedPod({ namespace: NS, name });

    describe("pods", () => {
      it("resets the status on create (Pending, QoS class) and applies the usual defaults", async () => {
        const created = await create("p-create", { status: { phase: "Running", podIP: "10.0.0.9" } });
        expect(created.status).toEqual({ phase: "Pending", qosClass: "BestEffort" });
        expect(created.metadata?.generation).toBe(1);
        expect(created.spec).toMatchObject({ restartPolicy: "Always", dnsPolicy: "ClusterFirst", terminationGracePeriodSeconds: 30 });
        expect(created.spec?.containers[0]).toMatchObject({
          imagePullPolicy: "IfNotPresent",
          terminationMessagePath: "/dev/termination-log",
        });
      });

      it("validates the spec (422)", async () => {
        const { code, status } = await failure(
          h.core.createNamespacedPod({ namespace: NS, body: { metadata: { name: "p-bad" }, spec: { containers: [] } } }),
        );
        expect(code).toBe(422);
        expect(status.message).toBe('Pod "p-bad" is invalid: spec.containers: Required value');
        expect(status.details).toMatchObject({ name: "p-bad", kind: "Pod" });
        expect(status.details).not.toHaveProperty("group");
      });

      it("keeps spec and ownerReferences on pods/status writes, and ignores .status on the main resource", async () => {
        const created = await create("p-status");
        const withStatus = await h.core.replaceNamespacedPodStatus({
          namespace: NS,
          name: "p-status",
          body: {
            ...created,
            metadata: {
              ...created.metadata,
              labels: { via: "status" },
              ownerReferences: [{ apiVersion: "v1", kind: "Node", name: "n", uid: "u" }],
            },
            spec: { ...created.spec, nodeName: "sneaky", containers: created.spec?.containers ?? [] },
            status: { phase: "Running", podIP: "10.1.2.3" },
          },
        });
        expect(withStatus.status).toMatchObject({ phase: "Running", podIP: "10.1.2.3", qosClass: "BestEffort" });
        expect(withStatus.spec?.nodeName).toBeUndefined();
        // Like podStatusStrategy: spec and ownerReferences stay; labels and annotations do change through pods/status.
        expect(withStatus.metadata?.ownerReferences).toBeUndefined();
        expect(withStatus.metadata?.labels).toEqual({ via: "status" });
        const main = await h.core.replaceNamespacedPod({
          namespace: NS,
          name: "p-status",
          body: { ...withStatus, metadata: { ...withStatus.metadata, labels: { l: "1" } }, status: { phase: "Failed" } },
        });
        expect(main.status?.phase).toBe("Running");
        expect(main.metadata?.labels).toEqual({ l: "1" });
        const patched = await h.core.patchNamespacedPodStatus(
          { namespace: NS, name: "p-status", body: { status: { phase: "Succeeded" } } },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
        );
        expect(patched.status?.phase).toBe("Succeeded");
        expect((await h.core.readNamespacedPodStatus({ namespace: NS, name: "p-status" })).status?.phase).toBe("Succeeded");
      });

      it("allows a PUT without resourceVersion (pods allow unconditional updates) but refuses spec changes", async () => {
        const created = await create("p-put");
        const unconditional = await h.core.replaceNamespacedPod({
          namespace: NS,
          name: "p-put",
          body: { ...created, metadata: { ...created.metadata, resourceVersion: undefined, annotations: { a: "b" } } },
        });
        expect(unconditional.metadata?.annotations).toEqual({ a: "b" });
        const image = await h.core.replaceNamespacedPod({
          namespace: NS,
          name: "p-put",
          body: {
            ...unconditional,
            spec: { ...unconditional.spec, containers: [{ ...unconditional.spec?.containers[0], name: "app", image: "app:2" }] },
          },
        });
        expect(image.metadata?.generation).toBe(2);
        const { code, status } = await failure(
          h.core.replaceNamespacedPod({
            namespace: NS,
            name: "p-put",
            body: { ...image, spec: { ...image.spec, containers: image.spec?.containers ?? [], nodeName: "n1" } },
          }),
        );
        expect(code).toBe(422);
        expect(status.message).toContain("spec: Forbidden: pod updates may not change fields other than");
      });

      it("selects pods by spec.nodeName and status.phase; other fields are 400", async () => {
        await create("p-n1", { spec: { nodeName: "node-1" } }, "fields");
        await create("p-n2", { spec: { nodeName: "node-2" } }, "fields");
        await create("p-none", {}, "fields");
        const byNode = await h.core.listNamespacedPod({ namespace: "fields", fieldSelector: "spec.nodeName=node-1" });
        expect(byNode.items.map((p) => p.metadata?.name)).toEqual(["p-n1"]);
        const unscheduled = await h.core.listNamespacedPod({ namespace: "fields", fieldSelector: "spec.nodeName=" });
        expect(unscheduled.items.map((p) => p.metadata?.name)).toEqual(["p-none"]);
        const n2 = await h.core.readNamespacedPod({ namespace: "fields", name: "p-n2" });
        await h.core.replaceNamespacedPodStatus({ namespace: "fields", name: "p-n2", body: { ...n2, status: { phase: "Running" } } });
        const running = await h.core.listPodForAllNamespaces({ fieldSelector: "status.phase=Running,metadata.namespace=fields" });
        expect(running.items.map((p) => p.metadata?.name)).toEqual(["p-n2"]);
        const notRunning = await h.core.listNamespacedPod({ namespace: "fields", fieldSelector: "status.phase!=Running" });
        expect(notRunning.items.map((p) => p.metadata?.name)).toEqual(["p-n1", "p-none"]);
        const { code, status } = await failure(h.core.listNamespacedPod({ namespace: "fields", fieldSelector: "spec.hostname=x" }));
        expect(code).toBe(400);
        expect(status.message).toBe("field label not supported: spec.hostname");
      });

      it("serves a typed PodList: items without apiVersion/kind", async () => {
        await create("p-list", {}, "typed");
        const response = await raw(h, "GET", "/api/v1/namespaces/typed/pods");
        expect(response.body).toMatchObject({ apiVersion: "v1", kind: "PodList" });
        const item = (response.body as { items: object[] }).items[0];
        expect(item).not.toHaveProperty("apiVersion");
        expect(item).not.toHaveProperty("kind");
        expect(await raw(h, "GET", "/api/v1/namespaces/typed/pods/p-list")).toMatchObject({ body: { apiVersion: "v1", kind: "Pod" } });
      });

      it("deletes an unscheduled pod at once and a scheduled one gracefully", async () => {
        await create("p-unscheduled");
        const created = await read("p-unscheduled");
        const gone = await h.core.deleteNamespacedPod({ namespace: NS, name: "p-unscheduled" });
        // answered as BeforeDelete left it: marked with grace 0, generation bumped
        expect(gone.metadata?.deletionTimestamp).toBeInstanceOf(Date);
        expect(gone.metadata?.deletionGracePeriodSeconds).toBe(0);
        expect(gone.metadata?.generation).toBe((created.metadata?.generation ?? 0) + 1);
        expect((await failure(read("p-unscheduled"))).code).toBe(404);

        await create("p-scheduled", { spec: { nodeName: "node-1" } });
        const terminating = await h.core.deleteNamespacedPod({ namespace: NS, name: "p-scheduled" });
        expect(terminating.metadata?.deletionTimestamp).toBeInstanceOf(Date);
        expect(terminating.metadata?.deletionGracePeriodSeconds).toBe(30);
        expect((await read("p-scheduled")).metadata?.deletionGracePeriodSeconds).toBe(30);
        const forced = await h.core.deleteNamespacedPod({ namespace: NS, name: "p-scheduled", gracePeriodSeconds: 0 });
        expect(forced.metadata?.deletionGracePeriodSeconds).toBe(0);
        expect(forced.metadata?.generation).toBe(terminating.metadata?.generation);
        expect(forced.metadata?.deletionTimestamp?.getTime()).toBeLessThan(terminating.metadata?.deletionTimestamp?.getTime() ?? 0);
        expect((await failure(read("p-scheduled"))).code).toBe(404);
      });

      it("round-trips a pod read by client-node (Date fields) through PUT", async () => {
        await create("p-roundtrip", { spec: { nodeName: "node-1" } });
        await h.core.deleteNamespacedPod({ namespace: NS, name: "p-roundtrip" });
        const terminating = await read("p-roundtrip");
        const relabelled = await h.core.replaceNamespacedPod({
          namespace: NS,
          name: "p-roundtrip",
          body: { ...terminating, metadata: { ...terminating.metadata, labels: { x: "y" } } },
        });
        expect(relabelled.metadata?.labels).toEqual({ x: "y" });
      });
    });
  });
}
