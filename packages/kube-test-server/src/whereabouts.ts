import { METADATA_FIELDS, objectSchema, withoutMetadata } from "./kind-helpers.js";
import type { KindSpec } from "./kinds.js";
import type { Schema } from "./schema.js";

// The Whereabouts CRDs as @ipamkit/storage-kubernetes ships them in manifests/crds.yaml — the
// manifests the real kube-apiserver in the tests installs: namespaced, v1alpha1, no subresources
// (so `.status` is written with the object, and pruned, being undeclared), Whereabouts' fields plus
// the IPPool entries' `poduid`, `created` and x-kubernetes-preserve-unknown-fields. An undeclared
// field elsewhere (e.g. an OverlappingRangeIPReservation's `spec.ipamclaimref`) is pruned, as the
// real server does. Against Whereabouts' own CRD a real server prunes the entry fields too;
// storage-kubernetes detects that and warns.

const GROUP = "whereabouts.cni.cncf.io";
const VERSION = "v1alpha1";
const string: Schema = { type: "string" };

const IP_POOL: Schema = objectSchema({
  spec: {
    type: "object",
    properties: {
      range: string,
      allocations: {
        type: "object",
        additionalProperties: {
          type: "object",
          properties: { id: string, podref: string, ifname: string, poduid: string, created: string },
          required: ["id", "podref"],
          preserveUnknownFields: true,
        },
      },
    },
    required: ["allocations", "range"],
  },
});

const OVERLAPPING_RANGE_IP_RESERVATION: Schema = objectSchema(
  {
    spec: {
      type: "object",
      properties: { containerid: string, podref: string, ifname: string },
      required: ["podref"],
    },
  },
  ["spec"],
);

const NODE_SLICE_POOL: Schema = objectSchema({
  spec: { type: "object", properties: { range: string, sliceSize: string }, required: ["range", "sliceSize"] },
  status: {
    type: "object",
    properties: {
      allocations: {
        type: "array",
        items: { type: "object", properties: { nodeName: string, sliceRange: string }, required: ["nodeName", "sliceRange"] },
      },
    },
    required: ["allocations"],
  },
});

function customResource(kind: string, plural: string, schema: Schema): KindSpec {
  return {
    group: GROUP,
    version: VERSION,
    apiVersion: `${GROUP}/${VERSION}`,
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
    namespaced: true,
    shortNames: [],
    subresources: [],
    fieldSelectors: Object.keys(METADATA_FIELDS),
    builtIn: false,
    schema,
    tracksGeneration: true,
    allowCreateOnUpdate: false,
    allowUnconditionalUpdate: false,
    strategicMergePatch: false,
    fields: METADATA_FIELDS,
    generationContent: withoutMetadata,
  };
}

export const WHEREABOUTS_KINDS: readonly KindSpec[] = [
  customResource("IPPool", "ippools", IP_POOL),
  customResource("OverlappingRangeIPReservation", "overlappingrangeipreservations", OVERLAPPING_RANGE_IP_RESERVATION),
  customResource("NodeSlicePool", "nodeslicepools", NODE_SLICE_POOL),
];
