import { type FieldError, forbidden, invalidValue, required } from "./errors.js";
import { deepEqual, isObject, type JsonObject, str } from "./json.js";

// Name and metadata validation with the messages of k8s.io/apimachinery/pkg/util/validation.

const DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN = `${DNS1123_LABEL}(\\.${DNS1123_LABEL})*`;
const QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE = `(${QUALIFIED_NAME})?`;

const whole = (pattern: string) => new RegExp(`^(?:${pattern})$`);
const labelRe = whole(DNS1123_LABEL);
const subdomainRe = whole(DNS1123_SUBDOMAIN);
const qualifiedNameRe = whole(QUALIFIED_NAME);
const labelValueRe = whole(LABEL_VALUE);

const tooLong = (max: number) => `must be no more than ${max} characters`;

export function dnsSubdomainErrors(value: string): string[] {
  const errors: string[] = [];
  if (value.length > 253) errors.push(tooLong(253));
  if (!subdomainRe.test(value))
    errors.push(
      `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '${DNS1123_SUBDOMAIN}')`,
    );
  return errors;
}

export function dnsLabelErrors(value: string): string[] {
  const errors: string[] = [];
  if (value.length > 63) errors.push(tooLong(63));
  if (!labelRe.test(value))
    errors.push(
      `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '${DNS1123_LABEL}')`,
    );
  return errors;
}

/** NameIsDNSSubdomain(name, prefix): a generateName prefix may end in '-'. */
export function objectNameErrors(name: string, prefix: boolean): string[] {
  return dnsSubdomainErrors(prefix && name.endsWith("-") ? `${name.slice(0, -1)}a` : name);
}

export function isValidNamespace(namespace: string): boolean {
  return dnsLabelErrors(namespace).length === 0;
}

export function qualifiedNameErrors(value: string): string[] {
  const parts = value.split("/");
  const nameMessage = `must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '${QUALIFIED_NAME}')`;
  if (parts.length > 2)
    return [`a qualified name ${nameMessage} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  const name = parts.length === 2 ? (parts[1] ?? "") : value;
  const errors: string[] = [];
  if (parts.length === 2) {
    const prefix = parts[0] ?? "";
    if (prefix === "") errors.push("prefix part must be non-empty");
    else errors.push(...dnsSubdomainErrors(prefix).map((m) => `prefix part ${m}`));
  }
  if (name === "") errors.push("name part must be non-empty");
  else if (name.length > 63) errors.push(`name part ${tooLong(63)}`);
  if (name !== "" && !qualifiedNameRe.test(name)) errors.push(`name part ${nameMessage}`);
  return errors;
}

export function labelValueErrors(value: string): string[] {
  const errors: string[] = [];
  if (value.length > 63) errors.push(tooLong(63));
  if (!labelValueRe.test(value))
    errors.push(
      `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '${LABEL_VALUE}')`,
    );
  return errors;
}

const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

function stringMapErrors(field: string, value: unknown, checkValue: ((v: string) => string[]) | undefined): FieldError[] {
  if (value === undefined) return [];
  if (!isObject(value)) return [invalidValue(field, null, "must be a map of strings")];
  const errors: FieldError[] = [];
  for (const [k, v] of Object.entries(value)) {
    for (const m of qualifiedNameErrors(k)) errors.push(invalidValue(field, k, m));
    if (typeof v !== "string") errors.push(invalidValue(field, k, "value must be a string"));
    else if (checkValue !== undefined) for (const m of checkValue(v)) errors.push(invalidValue(field, v, m));
  }
  return errors;
}

function annotationErrors(value: unknown): FieldError[] {
  const errors = stringMapErrors("metadata.annotations", value, undefined);
  if (isObject(value)) {
    let size = 0;
    for (const [k, v] of Object.entries(value)) size += Buffer.byteLength(k) + (typeof v === "string" ? Buffer.byteLength(v) : 0);
    if (size > TOTAL_ANNOTATION_SIZE_LIMIT)
      errors.push({ type: "Too long", field: "metadata.annotations", detail: `must have at most ${TOTAL_ANNOTATION_SIZE_LIMIT} bytes` });
  }
  return errors;
}

function finalizerErrors(value: unknown): FieldError[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) return [invalidValue("metadata.finalizers", null, "must be a list of strings")];
  const errors: FieldError[] = [];
  value.forEach((f, i) => {
    if (typeof f !== "string") errors.push(invalidValue(`metadata.finalizers[${i}]`, null, "must be a string"));
    else for (const m of qualifiedNameErrors(f)) errors.push(invalidValue(`metadata.finalizers[${i}]`, f, m));
  });
  return errors;
}

/** ValidateObjectMeta for a create: name or generateName, labels, annotations, finalizers. */
export function objectMetaCreateErrors(metadata: JsonObject): FieldError[] {
  const errors: FieldError[] = [];
  const generateName = str(metadata, "generateName");
  const name = str(metadata, "name");
  if (generateName !== "")
    for (const m of objectNameErrors(generateName, true)) errors.push(invalidValue("metadata.generateName", generateName, m));
  if (name === "") errors.push(required("metadata.name", "name or generateName is required"));
  else for (const m of objectNameErrors(name, false)) errors.push(invalidValue("metadata.name", name, m));
  errors.push(...objectMetaCommonErrors(metadata));
  return errors;
}

function objectMetaCommonErrors(metadata: JsonObject): FieldError[] {
  return [
    ...stringMapErrors("metadata.labels", metadata.labels, labelValueErrors),
    ...annotationErrors(metadata.annotations),
    ...finalizerErrors(metadata.finalizers),
  ];
}

function immutable(field: string, now: unknown, before: unknown): FieldError[] {
  if (deepEqual(now as never, before as never)) return [];
  const value = typeof now === "string" || typeof now === "number" ? now : JSON.stringify(now ?? null);
  return [invalidValue(field, value, "field is immutable")];
}

/** ValidateObjectMetaUpdate: server-owned fields stay, no new finalizers once deleting. */
export function objectMetaUpdateErrors(metadata: JsonObject, old: JsonObject): FieldError[] {
  const errors = [
    ...immutable("metadata.uid", metadata.uid, old.uid),
    ...immutable("metadata.creationTimestamp", metadata.creationTimestamp, old.creationTimestamp),
    ...immutable("metadata.deletionTimestamp", metadata.deletionTimestamp, old.deletionTimestamp),
    ...immutable("metadata.deletionGracePeriodSeconds", metadata.deletionGracePeriodSeconds, old.deletionGracePeriodSeconds),
    ...objectMetaCommonErrors(metadata),
  ];
  if (old.deletionTimestamp !== undefined && Array.isArray(metadata.finalizers)) {
    const before = new Set(Array.isArray(old.finalizers) ? old.finalizers : []);
    const added = metadata.finalizers.filter((f) => !before.has(f));
    if (added.length > 0)
      errors.push(
        forbidden(
          "metadata.finalizers",
          `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(", ")}}`,
        ),
      );
  }
  return errors;
}
