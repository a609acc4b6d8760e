import type { JsonObject } from "./json.js";
import { KINDS, type KindSpec } from "./kinds.js";

// Legacy (unaggregated) discovery for what is served, enough for clients that resolve kinds
// (e.g. client-node's KubernetesObjectApi). Aggregated discovery is not offered.

const VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"];

export const VERSION_INFO: JsonObject = {
  major: "1",
  minor: "34",
  gitVersion: "v1.34.0-kube-test-server",
  gitCommit: "",
  gitTreeState: "clean",
  buildDate: "1970-01-01T00:00:00Z",
  goVersion: "none",
  compiler: "none",
  platform: "linux/amd64",
};

function resources(kinds: readonly KindSpec[]): JsonObject[] {
  return kinds.flatMap((k) => [
    { name: k.plural, singularName: k.singular, namespaced: true, kind: k.kind, verbs: VERBS, shortNames: [...k.shortNames] },
    ...k.subresources.map((s) => ({
      name: `${k.plural}/${s}`,
      singularName: "",
      namespaced: true,
      kind: k.kind,
      verbs: ["get", "patch", "update"],
    })),
  ]);
}

export function resourceList(group: string, version: string): JsonObject | undefined {
  const kinds = KINDS.filter((k) => k.group === group && k.version === version);
  if (kinds.length === 0) return undefined;
  const groupVersion = group === "" ? version : `${group}/${version}`;
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion, resources: resources(kinds) };
}

function groups(): JsonObject[] {
  const names = [...new Set(KINDS.filter((k) => k.group !== "").map((k) => k.group))];
  return names.map((name) => {
    const versions = [...new Set(KINDS.filter((k) => k.group === name).map((k) => k.version))].map((version) => ({
      groupVersion: `${name}/${version}`,
      version,
    }));
    return { name, versions, preferredVersion: versions[0] ?? null };
  });
}

export function apiGroup(name: string): JsonObject | undefined {
  const group = groups().find((g) => g.name === name);
  return group === undefined ? undefined : { kind: "APIGroup", apiVersion: "v1", ...group };
}

export function apiGroupList(): JsonObject {
  return { kind: "APIGroupList", apiVersion: "v1", groups: groups() };
}

export function apiVersions(serverAddress: string): JsonObject {
  return { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }] };
}
