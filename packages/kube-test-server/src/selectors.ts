import { badRequest } from "./errors.js";
import { isObject, type JsonObject } from "./json.js";
import { labelValueErrors, qualifiedNameErrors } from "./validation.js";

// Label selectors (k8s.io/apimachinery/pkg/labels) and field selectors (pkg/fields) as the API
// server parses them: a malformed selector is a 400.

export type LabelOperator = "exists" | "!exists" | "=" | "!=" | "in" | "notin" | "gt" | "lt";

export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  readonly values: readonly string[];
}

type Token = { kind: "id"; text: string } | { kind: "op"; text: string } | { kind: "end" };

const SPECIAL = new Set(["=", "!", "(", ")", ",", ">", "<"]);

function lex(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const ch = input[i] ?? "";
    if (/\s/.test(ch)) {
      i += 1;
    } else if (SPECIAL.has(ch)) {
      const two = input.slice(i, i + 2);
      const text = two === "!=" || two === "==" ? two : ch;
      tokens.push({ kind: "op", text });
      i += text.length;
    } else {
      let j = i;
      while (j < input.length && !SPECIAL.has(input[j] ?? "") && !/\s/.test(input[j] ?? "")) j += 1;
      tokens.push({ kind: "id", text: input.slice(i, j) });
      i = j;
    }
  }
  tokens.push({ kind: "end" });
  return tokens;
}

const describe = (t: Token) => (t.kind === "end" ? "" : t.text);

export function parseLabelSelector(input: string): LabelRequirement[] {
  const tokens = lex(input);
  let at = 0;
  const peek = (): Token => tokens[at] ?? { kind: "end" };
  const next = (): Token => tokens[at++] ?? { kind: "end" };
  // errors inside one requirement carry labels.Parse's "unable to parse requirement: " prefix; those
  // between requirements do not (kube-apiserver v1.37 wording)
  const syntax = (t: Token, expected: string) => badRequest(`unable to parse requirement: found '${describe(t)}', expected: ${expected}`);
  const between = (t: Token, expected: string) => badRequest(`found '${describe(t)}', expected: ${expected}`);
  const requirements: LabelRequirement[] = [];
  if (peek().kind === "end") return requirements;
  for (;;) {
    requirements.push(parseRequirement());
    const t = next();
    if (t.kind === "end") return requirements;
    if (!(t.kind === "op" && t.text === ",")) throw between(t, "',' or 'end of string'");
    const after = peek();
    if (!(after.kind === "id" || (after.kind === "op" && after.text === "!"))) throw between(after, "identifier after ','");
  }

  function identifier(expected: string): string {
    const t = next();
    if (t.kind !== "id") throw syntax(t, expected);
    return t.text;
  }

  function parseRequirement(): LabelRequirement {
    const first = peek();
    if (first.kind === "op" && first.text === "!") {
      next();
      return requirement(identifier("identifier"), "!exists", []);
    }
    const key = identifier("!, identifier, or 'end of string'");
    const t = peek();
    if (t.kind === "end" || (t.kind === "op" && t.text === ",")) return requirement(key, "exists", []);
    next();
    if (t.kind === "id" && (t.text === "in" || t.text === "notin")) return requirement(key, t.text, valueSet());
    if (t.kind === "op" && (t.text === "=" || t.text === "==" || t.text === "!="))
      return requirement(key, t.text === "!=" ? "!=" : "=", [exactValue()]);
    if (t.kind === "op" && (t.text === ">" || t.text === "<")) return requirement(key, t.text === ">" ? "gt" : "lt", [exactValue()]);
    throw syntax(t, "in, notin, =, ==, !=, gt, lt");
  }

  function exactValue(): string {
    const t = peek();
    if (t.kind === "end" || (t.kind === "op" && t.text === ",")) return "";
    return identifier("identifier");
  }

  function valueSet(): string[] {
    const open = next();
    if (!(open.kind === "op" && open.text === "("))
      throw badRequest(`unable to parse requirement: found '${describe(open)}' expected: '('`);
    const values: string[] = [];
    let expectValue = true;
    for (;;) {
      const t = next();
      if (t.kind === "op" && t.text === ")") {
        if (expectValue && values.length > 0) values.push("");
        return values;
      }
      if (t.kind === "op" && t.text === ",") {
        if (expectValue) values.push("");
        expectValue = true;
      } else if (t.kind === "id" && expectValue) {
        values.push(t.text);
        expectValue = false;
      } else throw syntax(t, "',' or ')'");
    }
  }
}

function requirement(key: string, operator: LabelOperator, values: string[]): LabelRequirement {
  const invalid = (what: string, value: string, message: string) =>
    badRequest(`unable to parse requirement: ${what}: Invalid value: ${JSON.stringify(value)}: ${message}`);
  for (const m of qualifiedNameErrors(key)) throw invalid("key", key, m);
  // `in ()` and `notin ()` parse (kube-apiserver v1.37 answers 200): `in ()` matches nothing, `notin ()` everything
  if (operator === "gt" || operator === "lt") {
    if (!/^-?\d+$/.test(values[0] ?? ""))
      throw invalid("values[0]", values[0] ?? "", "for 'gt', 'lt' operators, the value must be an integer");
  } else
    values.forEach((v, i) => {
      for (const m of labelValueErrors(v)) throw invalid(`values[${i}][${key}]`, v, m);
    });
  return { key, operator, values };
}

export function matchesLabels(selector: readonly LabelRequirement[], labels: unknown): boolean {
  const set: JsonObject = isObject(labels) ? labels : {};
  return selector.every((r) => {
    const has = Object.hasOwn(set, r.key);
    const value = has ? String(set[r.key]) : "";
    switch (r.operator) {
      case "exists":
        return has;
      case "!exists":
        return !has;
      case "=":
      case "in":
        return has && r.values.includes(value);
      case "!=":
      case "notin":
        return !has || !r.values.includes(value);
      case "gt":
      case "lt": {
        if (!has || !/^-?\d+$/.test(value)) return false;
        const [a, b] = [BigInt(value), BigInt(r.values[0] ?? "0")];
        return r.operator === "gt" ? a > b : a < b;
      }
    }
    return false;
  });
}

export interface FieldRequirement {
  readonly field: string;
  readonly operator: "=" | "!=";
  readonly value: string;
}

function splitUnescaped(input: string, separator: string): string[] {
  const parts: string[] = [];
  let current = "";
  for (let i = 0; i < input.length; i++) {
    const ch = input[i] ?? "";
    if (ch === "\\" && i + 1 < input.length) {
      current += ch + (input[i + 1] ?? "");
      i += 1;
    } else if (ch === separator) {
      parts.push(current);
      current = "";
    } else current += ch;
  }
  parts.push(current);
  return parts;
}

function unescapeValue(term: string, raw: string): string {
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i] ?? "";
    if (ch === "\\") {
      const next = raw[i + 1];
      if (next !== "\\" && next !== "," && next !== "=") throw badRequest(`invalid field selector: '${term}': invalid escape sequence`);
      out += next;
      i += 1;
    } else if (ch === "," || ch === "=") throw badRequest(`invalid field selector: '${term}': unescaped '${ch}'`);
    else out += ch;
  }
  return out;
}

/** A field selector over the kind's supported fields; an unsupported field is a 400. */
export function parseFieldSelector(input: string, supported: readonly string[]): FieldRequirement[] {
  const requirements: FieldRequirement[] = [];
  for (const term of splitUnescaped(input, ",")) {
    if (term === "") continue;
    let found: FieldRequirement | undefined;
    for (let i = 0; i < term.length && found === undefined; i++) {
      if (term[i] === "\\") {
        i += 1;
        continue;
      }
      for (const op of ["!=", "==", "="]) {
        if (term.startsWith(op, i)) {
          found = { field: term.slice(0, i), operator: op === "!=" ? "!=" : "=", value: unescapeValue(term, term.slice(i + op.length)) };
          break;
        }
      }
    }
    if (found === undefined) throw badRequest(`invalid selector: '${term}'; can't understand '${term}'`);
    if (!supported.includes(found.field)) throw badRequest(`field label not supported: ${found.field}`);
    requirements.push(found);
  }
  return requirements;
}

export function matchesFields(selector: readonly FieldRequirement[], value: (field: string) => string): boolean {
  return selector.every((r) => (value(r.field) === r.value) === (r.operator === "="));
}
