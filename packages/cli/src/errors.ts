import { isIpamError } from "@ipamkit/core";

/** Exit codes: 0 clean / done, 1 the audit found a problem (or a release was refused), 2 an error. */
export const EXIT = { ok: 0, findings: 1, error: 2 } as const;

/** An error the CLI answers with one line and exit code 2: a bad option, config, kubeconfig or store. */
export class CliError extends Error {
  override readonly name = "CliError";
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT.error) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** One line for any error: its message's first line, with the typed error's code where it has one. */
export function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const first = message.split("\n").find((line) => line.trim() !== "") ?? message;
  const code = isIpamError(error) ? ` (${error.code})` : "";
  return `${first.trim()}${code}`;
}
