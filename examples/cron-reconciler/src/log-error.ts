import { isIpamError } from "@ipamkit/core";

/**
 * How the reconciler logs an error: its message once (pino's default serializer appends each
 * cause's message again, `connect ECONNREFUSED …: connect ECONNREFUSED …`), its code, never a stack.
 * `--once`, scheduled passes and the watch controller all log failures through these.
 */
export function errorMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const kept = text
    .split(/\r?\n/)
    .filter((line) => !/^\s*at\s/.test(line))
    .map((line) => line.trim())
    .filter((line) => line !== "");
  return kept.length === 0 ? "unknown error" : kept.join(" ");
}

/** The error's ipamkit code (or the library's string code, e.g. `ECONNREFUSED`), when it has one. */
export function errorCode(error: unknown): string | undefined {
  if (isIpamError(error)) return error.code;
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" ? code : undefined;
}

/** pino's `err` serializer: `{type, code?, message}` on one line, no stack, no repeated causes. */
export function serializeError(error: unknown): Record<string, string> {
  const type = error instanceof Error ? error.name : typeof error;
  const code = errorCode(error);
  return { type, ...(code === undefined ? {} : { code }), message: errorMessage(error) };
}

/** The fields and text of one failure line: `{code}`, `<what>: <message>`. */
export function failureLine(what: string, error: unknown): [{ code?: string }, string] {
  const code = errorCode(error);
  return [code === undefined ? {} : { code }, `${what}: ${errorMessage(error)}`];
}
