/**
 * What every CNI invocation must end as, whatever its input: exit 0 with a valid result (or
 * nothing, for the verbs that print nothing), or exit 1 with one CNI error JSON line carrying an
 * integer code and a message — never a stack trace, never an internal error, never an answer so
 * large it floods the runtime's log, and within the time bound.
 */

export interface Outcome {
  exitCode: number | null;
  signal?: string | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Largest stdout accepted for an error answer (values are quoted shortened). */
export const MAX_ERROR_BYTES = 4096;

const STACK = [/\n\s+at \S/, /^\s*at .*:\d+:\d+\)?$/m, /node:internal/, /\.(?:ts|js|cjs|mjs):\d+:\d+/, /\bTypeError: /, /\bRangeError: /];

/** The reasons this outcome breaks the contract; empty when it holds. `label` is the outcome's tally key. */
export function judge(command: string | undefined, outcome: Outcome, boundMs: number): { problems: string[]; label: string } {
  const problems: string[] = [];
  const { stdout, stderr } = outcome;
  if (outcome.ms > boundMs) problems.push(`took ${Math.round(outcome.ms)} ms (bound ${boundMs} ms)`);
  if (outcome.signal) problems.push(`ended by signal ${outcome.signal}`);
  for (const [name, text] of [
    ["stdout", stdout],
    ["stderr", stderr],
  ] as const) {
    const hit = STACK.find((re) => re.test(text));
    if (hit !== undefined) problems.push(`${name} looks like a stack trace (${hit}): ${text.slice(0, 400)}`);
  }
  let label = "";
  if (outcome.exitCode === 0) {
    label = `ok:${command || "about"}`;
    if (command === "ADD") {
      const result = parseLine(stdout);
      const ips = (result as { ips?: unknown } | undefined)?.ips;
      if (
        result === undefined ||
        typeof (result as { cniVersion?: unknown }).cniVersion !== "string" ||
        !Array.isArray(ips) ||
        ips.length === 0
      )
        problems.push(`ADD exit 0 without a result: ${stdout.slice(0, 300)}`);
      else if (
        !ips.every((ip) => typeof (ip as { address?: unknown }).address === "string" && /\/\d+$/.test((ip as { address: string }).address))
      )
        problems.push(`ADD result with a malformed address: ${stdout.slice(0, 300)}`);
    } else if (command === "VERSION") {
      const result = parseLine(stdout) as { supportedVersions?: unknown } | undefined;
      if (!Array.isArray(result?.supportedVersions)) problems.push(`VERSION without supportedVersions: ${stdout.slice(0, 300)}`);
    } else if (stdout !== "") problems.push(`${command ?? "no command"} exit 0 printed ${JSON.stringify(stdout.slice(0, 300))}`);
  } else if (outcome.exitCode === 1) {
    const error = parseLine(stdout) as { code?: unknown; msg?: unknown; cniVersion?: unknown; details?: unknown } | undefined;
    if (error === undefined) problems.push(`exit 1 without one CNI error JSON line: ${JSON.stringify(stdout.slice(0, 300))}`);
    else {
      const extra = Object.keys(error).filter((k) => !["cniVersion", "code", "msg", "details"].includes(k));
      if (!Number.isInteger(error.code)) problems.push(`error without an integer code: ${stdout.slice(0, 300)}`);
      if (typeof error.msg !== "string" || error.msg === "") problems.push(`error without a message: ${stdout.slice(0, 300)}`);
      if (typeof error.cniVersion !== "string") problems.push(`error without cniVersion: ${stdout.slice(0, 300)}`);
      if (extra.length > 0) problems.push(`error with unexpected keys ${extra.join(", ")}`);
      if (error.code === 999) problems.push(`internal error (999): ${stdout.slice(0, 400)}`);
      label = `error:${String(error.code)}`;
    }
    if (Buffer.byteLength(stdout) > MAX_ERROR_BYTES)
      problems.push(`error answer of ${Buffer.byteLength(stdout)} bytes: ${stdout.slice(0, 200)}…`);
  } else problems.push(`exit code ${outcome.exitCode}`);
  return { problems, label: label || "broken" };
}

/** The one JSON line of stdout (a trailing newline allowed), or undefined. */
function parseLine(stdout: string): unknown {
  if (!stdout.endsWith("\n") || stdout.indexOf("\n") !== stdout.length - 1) return undefined;
  try {
    return JSON.parse(stdout);
  } catch {
    return undefined;
  }
}

const clip = (text: string, n = 240) => (text.length > n ? `${text.slice(0, n)}…(${text.length} chars)` : text);

/** Failures grouped by kind, each with one clipped example (a readable assertion message). */
export function describeFailures(
  failures: { problems: string[]; c: { env: Record<string, string | undefined>; stdin: string; flat?: string } }[],
): string[] {
  const groups = new Map<string, { count: number; example: string }>();
  for (const f of failures) {
    const kind = (f.problems[0] ?? "")
      .replace(/"[^"]*"/g, '""')
      .replace(/\d+/g, "N")
      .slice(0, 80);
    const entry = groups.get(kind);
    if (entry !== undefined) entry.count += 1;
    else {
      const env = Object.fromEntries(Object.entries(f.c.env).map(([k, v]) => [k, v === undefined ? v : clip(v, 60)]));
      groups.set(kind, {
        count: 1,
        example: `${f.problems.map((p) => clip(p, 400)).join(" | ")} — env ${JSON.stringify(env)} stdin ${JSON.stringify(clip(f.c.stdin, 400))}${f.c.flat === undefined ? "" : ` flat ${JSON.stringify(clip(f.c.flat, 200))}`}`,
      });
    }
  }
  return [...groups].map(([kind, g]) => `${g.count}× ${kind}\n    e.g. ${g.example}`);
}
