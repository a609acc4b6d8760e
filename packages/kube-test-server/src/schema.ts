import { type FieldError, invalidValue, required } from "./errors.js";
import { isObject, type Json, type JsonObject, jsonType } from "./json.js";
import { parseMicroTime } from "./microtime.js";

/**
 * The little of OpenAPI v3 the served kinds need: enough for structural pruning (unknown fields
 * are dropped, as the API server does), for a custom resource's type/required validation (422),
 * and for a typed kind's JSON decoding (400).
 */
export type Schema =
  | { readonly type: "any" }
  | { readonly type: "string"; readonly format?: "micro-time" }
  | { readonly type: "integer" }
  | { readonly type: "boolean" }
  | {
      readonly type: "object";
      readonly properties?: Readonly<Record<string, Schema>>;
      readonly additionalProperties?: Schema;
      readonly required?: readonly string[];
      /** `x-kubernetes-preserve-unknown-fields: true`: undeclared fields are kept, not pruned. */
      readonly preserveUnknownFields?: boolean;
    }
  | { readonly type: "array"; readonly items: Schema };

export const ANY: Schema = { type: "any" };

const META_FIELDS = [
  "name",
  "generateName",
  "namespace",
  "selfLink",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
  "managedFields",
];

/** ObjectMeta's fields; anything else under `metadata` is dropped. */
export const METADATA: Schema = { type: "object", properties: Object.fromEntries(META_FIELDS.map((f) => [f, ANY])) };

const join = (path: string, key: string) => (path === "" ? key : `${path}.${key}`);

/** Structural pruning: drops undeclared fields in place and returns their paths. */
export function prune(value: Json, schema: Schema, path = "", dropped: string[] = []): string[] {
  if (schema.type === "object" && isObject(value)) {
    for (const [key, child] of Object.entries(value)) {
      const childSchema = schema.properties?.[key] ?? schema.additionalProperties;
      if (childSchema === undefined) {
        if (schema.preserveUnknownFields === true) continue;
        delete value[key];
        dropped.push(join(path, key));
      } else prune(child, childSchema, join(path, key), dropped);
    }
  } else if (schema.type === "array" && Array.isArray(value)) {
    value.forEach((item, i) => {
      prune(item, schema.items, `${path}[${i}]`, dropped);
    });
  }
  return dropped;
}

function typeMatches(value: Json, type: Schema["type"]): boolean {
  const actual = jsonType(value);
  return type === "any" || actual === type;
}

/** Custom-resource validation against the CRD schema: wrong types and missing required fields (422). */
export function schemaErrors(value: Json, schema: Schema, path = ""): FieldError[] {
  if (!typeMatches(value, schema.type)) {
    const actual = jsonType(value);
    return [
      { ...invalidValue(path, actual, `${path} in body must be of type ${schema.type}: "${actual}"`), cause: "FieldValueTypeInvalid" },
    ];
  }
  const errors: FieldError[] = [];
  if (schema.type === "object" && isObject(value)) {
    for (const key of schema.required ?? []) if (value[key] === undefined) errors.push(required(join(path, key)));
    for (const [key, child] of Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const childSchema = schema.properties?.[key] ?? schema.additionalProperties;
      if (childSchema !== undefined) errors.push(...schemaErrors(child, childSchema, join(path, key)));
    }
  } else if (schema.type === "array" && Array.isArray(value)) {
    value.forEach((item, i) => {
      errors.push(...schemaErrors(item, schema.items, `${path}[${i}]`));
    });
  }
  return errors;
}

const GO_TYPES: Record<string, string> = { string: "string", integer: "int32", boolean: "bool", object: "struct", array: "slice" };

/**
 * Decoding into a typed (built-in) object: `null` becomes the zero value (dropped), a wrong JSON
 * type or a malformed MicroTime is a decode error (the caller answers 400). Normalises MicroTimes
 * to UTC with 6 fractional digits, as the server re-serialises them. Returns the error text.
 */
export function decodeTyped(value: JsonObject, schema: Schema, path = ""): string | undefined {
  if (schema.type !== "object") return undefined;
  for (const [key, child] of Object.entries(value)) {
    const childSchema = schema.properties?.[key] ?? schema.additionalProperties;
    const at = join(path, key);
    if (childSchema === undefined || childSchema.type === "any") continue;
    if (child === null) {
      delete value[key];
      continue;
    }
    const actual = jsonType(child);
    if (actual !== childSchema.type) {
      const what = actual === "integer" || actual === "number" ? `number ${String(child)}` : actual;
      return `json: cannot unmarshal ${what} into Go struct field .${at} of type ${GO_TYPES[childSchema.type] ?? childSchema.type}`;
    }
    if (childSchema.type === "string" && childSchema.format === "micro-time" && typeof child === "string") {
      const parsed = parseMicroTime(child);
      if (typeof parsed === "object") return parsed.error;
      value[key] = parsed;
    }
    if (childSchema.type === "object" && isObject(child)) {
      const inner = decodeTyped(child, childSchema, at);
      if (inner !== undefined) return inner;
    }
  }
  return undefined;
}
