import { describe, expect, it } from "vitest";
import type { KubeObject } from "./json.js";
import { ObjectStore } from "./store.js";

const object = (namespace: string, name: string, rv: string, value = 0): KubeObject => ({
  metadata: { namespace, name, resourceVersion: rv },
  spec: { value },
});
const names = (objects: KubeObject[] | undefined) =>
  objects?.map((o) => `${(o.metadata as { namespace: string }).namespace}/${(o.metadata as { name: string }).name}`);

describe("ObjectStore.list", () => {
  const filled = () => {
    const store = new ObjectStore({ historyEvents: 100, historyBytes: 1 << 20 });
    // namespaces whose names prefix one another, written out of order
    for (const [ns, name] of [
      ["b", "x"],
      ["a", "z"],
      ["a-b", "y"],
      ["a", "m"],
      ["kube", "p"],
      ["a", "b"],
      ["kube-system", "q"],
    ] as const)
      store.write("things", "ADDED", undefined, (rv) => ({ object: object(ns, name, rv), bytes: 10 }));
    return store;
  };

  it("answers one namespace's objects in key order, after a continue key, from a kind unchanged since", () => {
    const store = filled();
    expect(names(store.list("things", undefined))).toEqual(["a-b/y", "a/b", "a/m", "a/z", "b/x", "kube-system/q", "kube/p"]);
    expect(names(store.list("things", "a"))).toEqual(["a/b", "a/m", "a/z"]);
    expect(names(store.list("things", "a", undefined, "a/b"))).toEqual(["a/m", "a/z"]);
    expect(names(store.list("things", "a", undefined, "a/z"))).toEqual([]);
    expect(names(store.list("things", "kube"))).toEqual(["kube/p"]);
    expect(names(store.list("things", "kube-system"))).toEqual(["kube-system/q"]);
    expect(names(store.list("things", undefined, undefined, "a/m"))).toEqual(["a/z", "b/x", "kube-system/q", "kube/p"]);
    expect(store.list("others", "a")).toEqual([]);
  });

  it("answers the state as of an older resourceVersion after writes, and the current one after a write", () => {
    const store = filled();
    const then = store.resourceVersion;
    const before = names(store.list("things", "a", then, "a/b"));
    store.write("things", "ADDED", undefined, (rv) => ({ object: object("a", "c", rv), bytes: 10 }));
    const m = store.get("things", "a", "m") as KubeObject;
    store.write("things", "DELETED", m, () => ({ object: m, bytes: 10 }));
    expect(names(store.list("things", "a", then, "a/b"))).toEqual(before);
    expect(names(store.list("things", "a", undefined, "a/b"))).toEqual(["a/c", "a/z"]);
    expect(names(store.list("things", "a"))).toEqual(["a/b", "a/c", "a/z"]);
  });
});
