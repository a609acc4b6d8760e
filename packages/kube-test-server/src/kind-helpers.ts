import { type JsonObject, type KubeObject, meta, str } from "./json.js";
import { ANY, METADATA, type Schema } from "./schema.js";

/** metadata.name and metadata.namespace: the field selectors every kind supports. */
export const METADATA_FIELDS = {
  "metadata.name": (o: KubeObject) => str(meta(o), "name"),
  "metadata.namespace": (o: KubeObject) => str(meta(o), "namespace"),
} as const;

const STRING: Schema = { type: "string" };

/** The schema of a whole object: apiVersion, kind, metadata and the given top-level fields. */
export function objectSchema(fields: Readonly<Record<string, Schema>>, required?: readonly string[]): Schema {
  return {
    type: "object",
    properties: { apiVersion: STRING, kind: STRING, metadata: METADATA, ...fields },
    ...(required === undefined ? {} : { required }),
  };
}

/** The object without metadata: what a custom resource's generation tracks (no status subresource). */
export function withoutMetadata(object: KubeObject): JsonObject {
  const { metadata: _metadata, ...rest } = object;
  return rest;
}

export { ANY };
