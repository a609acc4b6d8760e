// The Helm chart half of docs/configuration.md (scripts/gen-config-docs.ts): every value of
// charts/ipamkit/values.yaml with its default (the file's own), its type and bounds (from
// values.schema.json, which helm checks on install and upgrade) and what it does (the comment
// above it in values.yaml). A value the schema does not describe, or the reverse, fails here.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isMap, isScalar, isSeq, type Pair, parseDocument, type YAMLMap } from "yaml";
import { code, header, ROOT, row } from "./gen-config-docs.programs.js";

export const CHART_DIR = join(ROOT, "charts", "ipamkit");

interface Schema {
  type?: string | string[];
  enum?: unknown[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  maxLength?: number;
  minItems?: number;
  description?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  oneOf?: Schema[];
  not?: Schema;
}

/** A value of the chart: its dotted path, default, the comment above it and its schema. */
export interface ChartValue {
  path: string;
  default: unknown;
  comment: string;
  schema: Schema;
}

function typeOf(s: Schema): string {
  if (s.oneOf !== undefined) return s.oneOf.map(typeOf).join(" or ");
  if (s.enum !== undefined) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
  const base = Array.isArray(s.type) ? s.type.join(" or ") : (s.type ?? "any");
  const bounds: string[] = [];
  if (s.minimum !== undefined) bounds.push(`≥ ${s.minimum}`);
  if (s.exclusiveMinimum !== undefined) bounds.push(`> ${s.exclusiveMinimum}`);
  if (s.maximum !== undefined) bounds.push(`≤ ${s.maximum}`);
  if (s.maxLength !== undefined) bounds.push(`≤ ${s.maxLength} characters`);
  if (s.minItems !== undefined) bounds.push(`at least ${s.minItems}`);
  if (base === "array" && s.items !== undefined) {
    const item = typeOf(s.items);
    const not = s.items.not?.enum === undefined ? "" : `, not ${s.items.not.enum.map((v) => JSON.stringify(v)).join(", ")}`;
    return [`array of ${item}${not}`, ...bounds].join(", ");
  }
  if (base.endsWith("string") && s.pattern !== undefined)
    bounds.unshift(base === "string" ? `matching /${s.pattern}/` : `(a string matching /${s.pattern}/)`);
  return [base, ...bounds].join(" ");
}

/** A map whose keys the schema does not fix (resources, nodeSelector, podAnnotations…): a value of its own. */
const isOpenMap = (s: Schema) => s.type === "object" && s.properties === undefined;

/** The comment lines above a key, joined (the `#` and the indentation removed); the parser gives a map's first key's to the map. */
const commentOf = (pair: Pair, map: YAMLMap) => {
  const own = isScalar(pair.key) ? pair.key.commentBefore : undefined;
  const text = own ?? (map.items[0] === pair ? map.commentBefore : undefined) ?? "";
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "")
    .join(" ");
};

/** Every value of values.yaml in file order, each checked against the schema. */
export function chartValues(): ChartValue[] {
  const doc = parseDocument(readFileSync(join(CHART_DIR, "values.yaml"), "utf8"));
  const schema = JSON.parse(readFileSync(join(CHART_DIR, "values.schema.json"), "utf8")) as Schema;
  const out: ChartValue[] = [];
  const walk = (map: YAMLMap, s: Schema, prefix: string, inherited: string) => {
    const documented = new Set<string>();
    for (const pair of map.items) {
      const key = String(isScalar(pair.key) ? pair.key.value : pair.key);
      const path = `${prefix}${key}`;
      const inner = s.properties?.[key];
      if (inner === undefined) throw new Error(`charts/ipamkit: ${path} is in values.yaml but not in values.schema.json`);
      documented.add(key);
      const comment = commentOf(pair as Pair, map) || inherited;
      if (isMap(pair.value) && !isOpenMap(inner)) walk(pair.value, inner, `${path}.`, comment);
      else
        out.push({
          path,
          default: isSeq(pair.value) || isMap(pair.value) ? pair.value.toJSON() : (pair.value as { value: unknown })?.value,
          comment,
          schema: inner,
        });
    }
    const missing = Object.keys(s.properties ?? {}).filter((k) => !documented.has(k) && !(prefix === "" && k === "global"));
    if (missing.length > 0)
      throw new Error(`charts/ipamkit: ${missing.map((k) => prefix + k).join(", ")} in values.schema.json but not in values.yaml`);
  };
  walk(doc.contents as YAMLMap, schema, "", "");
  return out;
}

/** A default as the docs show it: `""`, `ipamkit`, `["ipamkit"]`. */
export const shown = (value: unknown) => (value === "" ? '`""`' : code(typeof value === "string" ? value : JSON.stringify(value)));

export function chartSection(): string[] {
  const lines = [
    "## Helm chart values: `charts/ipamkit`",
    "",
    "Each value's default is the chart's `values.yaml`; its type and bounds come from `values.schema.json`, which helm checks on `install`, `upgrade` and `template`, so a value outside them is refused before anything reaches the cluster. The flat-file keys the chart writes (`agent_socket`, `agent_required`, `etcd_*`, `whereabouts_lease`) are the `ipam` keys above, in `<cni.confDir>/whereabouts.d/whereabouts.conf` (mode 0600).",
    "",
    ...header(["value", "type", "default", "what it does"]),
  ];
  for (const value of chartValues()) {
    lines.push(row([code(value.path), typeOf(value.schema), shown(value.default), value.comment || value.schema.description || "—"]));
  }
  return lines;
}
