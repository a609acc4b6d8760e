import { request } from "node:https";
import { Ajv, type ValidateFunction } from "ajv";
import type { Rendered } from "./helm.js";

// A kubeconform-style check (its -strict mode) against the OpenAPI v3 schemas a real kube-apiserver
// serves at /openapi/v3: each object validated against the schema of its group, version and kind,
// with every object schema that lists its properties closed (additionalProperties: false, unless
// the schema keeps unknown fields), so a misspelt or misplaced field fails as a wrong type does.

export interface ApiAccess {
  url: string;
  ca: string;
  token: string;
}

type Json = Record<string, unknown>;

function get(api: ApiAccess, path: string): Promise<Json> {
  return new Promise((resolve, reject) => {
    const req = request(`${api.url}${path}`, { ca: api.ca, headers: { authorization: `Bearer ${api.token}` } }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () =>
        res.statusCode === 200 ? resolve(JSON.parse(body) as Json) : reject(new Error(`GET ${path}: ${res.statusCode} ${body}`)),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

/** Closes every object schema that names its properties (kubeconform -strict). */
function closeObjects(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) closeObjects(item);
    return;
  }
  if (typeof node !== "object" || node === null) return;
  const schema = node as Json;
  if (
    typeof schema.properties === "object" &&
    schema.additionalProperties === undefined &&
    schema["x-kubernetes-preserve-unknown-fields"] !== true
  )
    schema.additionalProperties = false;
  for (const value of Object.values(schema)) closeObjects(value);
}

/** The path of an apiVersion's document: `api/v1`, `apis/apps/v1`. */
const documentPath = (apiVersion: string) => (apiVersion.includes("/") ? `apis/${apiVersion}` : `api/${apiVersion}`);

/** Validates objects against the server's schemas; `validate` answers the errors (none: valid). */
export async function openapiValidator(api: ApiAccess): Promise<{ validate(object: Rendered): Promise<string[]> }> {
  const index = (await get(api, "/openapi/v3")) as { paths: Record<string, { serverRelativeURL: string }> };
  const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
  const loaded = new Map<string, Json>();
  const compiled = new Map<string, ValidateFunction>();

  async function schemaFor(object: Rendered): Promise<ValidateFunction> {
    const key = `${object.apiVersion}/${object.kind}`;
    const done = compiled.get(key);
    if (done !== undefined) return done;
    const path = documentPath(object.apiVersion);
    const entry = index.paths[path];
    if (entry === undefined) throw new Error(`the server serves no schema for ${object.apiVersion}`);
    let doc = loaded.get(path);
    if (doc === undefined) {
      doc = await get(api, entry.serverRelativeURL);
      closeObjects(doc);
      doc.$id = `https://kube-apiserver.test/openapi/v3/${path}`;
      ajv.addSchema(doc);
      loaded.set(path, doc);
    }
    const [group, version] = object.apiVersion.includes("/") ? object.apiVersion.split("/") : ["", object.apiVersion];
    const schemas = (doc.components as { schemas: Record<string, Json> }).schemas;
    const name = Object.keys(schemas).find((n) =>
      ((schemas[n]?.["x-kubernetes-group-version-kind"] as Json[] | undefined) ?? []).some(
        (gvk) => gvk.group === group && gvk.version === version && gvk.kind === object.kind,
      ),
    );
    if (name === undefined) throw new Error(`no schema for ${key} in ${path}`);
    const validate = ajv.compile({ $ref: `${doc.$id}#/components/schemas/${name}` });
    compiled.set(key, validate);
    return validate;
  }

  return {
    async validate(object: Rendered) {
      const validate = await schemaFor(object);
      if (validate(structuredClone(object) as unknown)) return [];
      return (validate.errors ?? []).map(
        (e) => `${object.kind}/${object.metadata.name}${e.instancePath}: ${e.message} ${JSON.stringify(e.params)}`,
      );
    },
  };
}
