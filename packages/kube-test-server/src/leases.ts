import { type FieldError, invalidValue } from "./errors.js";
import { obj } from "./json.js";
import { METADATA_FIELDS, objectSchema } from "./kind-helpers.js";
import type { KindSpec } from "./kinds.js";
import type { Schema } from "./schema.js";

// coordination.k8s.io/v1 Lease (pkg/registry/coordination/lease): create-on-update allowed, no
// unconditional update, no generation; acquireTime/renewTime are MicroTimes (6 fractional digits).

const microTime: Schema = { type: "string", format: "micro-time" };

const LEASE: Schema = objectSchema({
  spec: {
    type: "object",
    properties: {
      holderIdentity: { type: "string" },
      leaseDurationSeconds: { type: "integer" },
      acquireTime: microTime,
      renewTime: microTime,
      leaseTransitions: { type: "integer" },
      strategy: { type: "string" },
      preferredHolder: { type: "string" },
    },
  },
});

function leaseErrors(lease: Parameters<KindSpec["generationContent"]>[0]): FieldError[] {
  const spec = obj(lease, "spec");
  const errors: FieldError[] = [];
  const duration = spec?.leaseDurationSeconds;
  if (typeof duration === "number" && duration <= 0)
    errors.push(invalidValue("spec.leaseDurationSeconds", duration, "must be greater than 0"));
  const transitions = spec?.leaseTransitions;
  if (typeof transitions === "number" && transitions < 0)
    errors.push(invalidValue("spec.leaseTransitions", transitions, "must be greater than or equal to 0"));
  return errors;
}

export const LEASES: KindSpec = {
  group: "coordination.k8s.io",
  version: "v1",
  apiVersion: "coordination.k8s.io/v1",
  kind: "Lease",
  listKind: "LeaseList",
  plural: "leases",
  singular: "lease",
  namespaced: true,
  shortNames: [],
  subresources: [],
  fieldSelectors: Object.keys(METADATA_FIELDS),
  builtIn: true,
  schema: LEASE,
  tracksGeneration: false,
  allowCreateOnUpdate: true,
  allowUnconditionalUpdate: false,
  strategicMergePatch: true,
  fields: METADATA_FIELDS,
  generationContent: () => undefined,
  validate: leaseErrors,
  validateUpdate: leaseErrors,
};
