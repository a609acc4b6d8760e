import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { z } from "zod";

/** One raw result file, read and checked: its name in bench/results/ and its content. */
export interface RawFile<T> {
  readonly name: string;
  readonly data: T;
}

/** A raw result file that is not what its benchmark writes. */
export class RawFileError extends Error {
  readonly code = "RAW_FILE_INVALID";
  constructor(name: string, why: string) {
    super(`[bench-figures] bench/results/${name}: ${why}`);
    this.name = "RawFileError";
  }
}

/**
 * `dir/name` checked against `schema`; undefined when the file is not there (its rows are then
 * left out), a RawFileError when it is there but not valid JSON or not of the shape expected.
 */
export function readRaw<S extends z.ZodType>(dir: string, name: string, schema: S): RawFile<z.infer<S>> | undefined {
  const path = join(dir, name);
  if (!existsSync(path)) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new RawFileError(name, `not JSON (${(error as Error).message})`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RawFileError(name, `${issue?.path.join(".") || "(top)"}: ${issue?.message ?? "invalid"}`);
  }
  return { name, data: parsed.data };
}

/** How a row names where its figures come from: the raw file, linked, and the commit measured. */
export function provenance(file: RawFile<{ commit?: string | undefined; dirty?: boolean | undefined }>): string {
  const { commit, dirty } = file.data;
  const at = commit === undefined ? "commit not recorded" : `${commit}${dirty === true ? " + local changes" : ""}`;
  return `[${file.name}](bench/results/${file.name}) @ ${at}`;
}
