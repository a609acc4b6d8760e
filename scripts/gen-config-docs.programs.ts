// The command-line half of docs/configuration.md (scripts/gen-config-docs.ts): the agent's, the
// reconciler's and the CLI's options, checked against the programs and with the errors they print.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseOptions, UsageError } from "../examples/cron-reconciler/src/args.js";
import { buildProgram, run as runCli } from "../packages/cli/src/main.js";
import { AGENT_FLAGS, CLI_FLAGS, type FlagDoc, RECONCILER_FLAGS } from "./gen-config-docs.flags.js";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const BUILD = "pnpm turbo run build --filter=@ipamkit/example-cni-plugin --filter=@ipamkit/example-cron-reconciler";
/** The built programs run for the errors their own start-up checks print. The CLI runs in-process. */
const PROGRAMS = {
  agent: "examples/cni-plugin/dist/ipamkit-agent",
  reconciler: "examples/cron-reconciler/dist/main.js",
};
type Program = keyof typeof PROGRAMS | "cli";

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");
export const code = (text: string) => `\`${text}\``;
export const row = (cells: string[]) => `| ${cells.map(cell).join(" | ")} |`;
export const header = (cells: string[]) => [row(cells), row(cells.map(() => "---"))];

// ---- command-line options, errors from the built programs --------------------------------------

type Command = ReturnType<typeof buildProgram>;

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

function runProgram(program: keyof typeof PROGRAMS, args: string[]): Promise<Ran> {
  const file = join(ROOT, PROGRAMS[program]);
  if (!existsSync(file)) throw new Error(`${PROGRAMS[program]} is not built: run ${BUILD}`);
  return new Promise((done) => {
    execFile(process.execPath, [file, ...args], { timeout: 10_000, env: { ...process.env, KUBECONFIG: "" } }, (error, stdout, stderr) => {
      done({ status: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr });
    });
  });
}

/** The message of a pino line at level error or fatal (the reconciler logs a failed start so). */
function fatalLog(line: string): string | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    const entry = JSON.parse(line) as { level?: number; msg?: string };
    return (entry.level ?? 0) >= 50 && typeof entry.msg === "string" ? `(log, level ${entry.level}) ${entry.msg}` : undefined;
  } catch {
    return undefined;
  }
}

/** What a command line prints when refused: the reconciler's and the CLI's own validators run in-process (the programs print `error: <message>`), the rest as built programs. */
async function printed(program: Program, argv: string[]): Promise<{ lines: string[]; refused: boolean }> {
  if (program === "reconciler") {
    try {
      parseOptions(argv);
    } catch (error) {
      if (error instanceof UsageError) return { lines: [`error: ${error.message}`], refused: true };
      throw error;
    }
  }
  if (program === "cli") {
    const lines: string[] = [];
    const status = await runCli(argv, { out: () => {}, err: (text) => lines.push(...text.split("\n")) });
    return { lines, refused: status !== 0 };
  }
  const ran = await runProgram(program, argv);
  return { lines: `${ran.stderr}\n${ran.stdout}`.split("\n"), refused: ran.status !== 0 && ran.status !== null };
}

/** The line a refused command line prints (`error: …`), or a failure naming the flag. */
async function refusal(program: Program, flag: string, args: string[], emptyDir: string): Promise<string> {
  const argv = args.map((a) => (a === "$EMPTY_DIR" ? emptyDir : a));
  const { lines, refused } = await printed(program, argv);
  const line = lines.find((l) => /^(error: |ipamkit-agent: )/.test(l)) ?? lines.map(fatalLog).find((m) => m !== undefined);
  if (!refused || line === undefined) throw new Error(`${program} --${flag}: ${JSON.stringify(args)} was not refused with an error line`);
  return `${code(args.map((a) => (a === "$EMPTY_DIR" ? "EMPTY_DIR" : a)).join(" "))} → ${code(line.trim())}`;
}

function sameFlags(where: string, known: string[], documented: string[]): void {
  const a = [...new Set(known)].sort();
  const b = [...documented].sort();
  if (JSON.stringify(a) !== JSON.stringify(b))
    throw new Error(`${where}: the program's options (${a.join(", ")}) and the documented ones (${b.join(", ")}) differ`);
}

export async function flagTable(program: "agent" | "reconciler", emptyDir: string): Promise<string[]> {
  const help = await runProgram(program, ["--help"]);
  const known = [...`${help.stdout}${help.stderr}`.matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1] as string).filter((f) => f !== "help");
  const flags = program === "agent" ? AGENT_FLAGS : RECONCILER_FLAGS;
  sameFlags(program, known, Object.keys(flags));
  const errors: string[] = [];
  for (const [flag, doc] of Object.entries(flags))
    errors.push(doc.bad === undefined ? "—" : await refusal(program, flag, doc.bad, emptyDir));
  const lines = header(["option", "default", "Whereabouts", "what it does", "error when wrong"]);
  Object.entries(flags).forEach(([flag, doc], i) => {
    lines.push(
      row([
        code(`--${flag}${doc.value === undefined ? "" : ` ${doc.value}`}`),
        doc.default ?? "—",
        doc.whereabouts,
        doc.description ?? "",
        errors[i] as string,
      ]),
    );
  });
  return lines;
}

export async function cliSection(emptyDir: string): Promise<string[]> {
  const program = buildProgram({ out: () => {}, err: () => {}, exit: () => {}, stderrIsTty: false });
  const commands = program.commands;
  const visible = (c: Command) => c.options.filter((o) => !o.hidden && o.long !== undefined);
  // the store commands share their options; preflight (the cluster, not a store) has its own
  const storeCommands = commands.filter((c) => c.name() !== "preflight");
  const common = visible(commands[0] as Command).filter((o) => storeCommands.every((c) => visible(c).some((p) => p.long === o.long)));
  const isCommon = (long: string | undefined) => common.some((o) => o.long === long);
  sameFlags(
    "cli",
    commands.flatMap((c) => visible(c).map((o) => (o.long as string).slice(2))),
    Object.keys(CLI_FLAGS),
  );
  const table = async (options: Command["options"]) => {
    const lines = header(["option", "default", "Whereabouts", "what it does", "error when wrong"]);
    for (const o of options) {
      const name = (o.long as string).slice(2);
      const doc = CLI_FLAGS[name] as FlagDoc;
      const dflt = o.negate ? "on (this turns it off)" : (o.defaultValueDescription ?? "—");
      const error = doc.bad === undefined ? "—" : await refusal("cli", name, doc.bad, emptyDir);
      lines.push(row([code(o.flags), dflt, doc.whereabouts, o.description, error]));
    }
    return lines;
  };
  const out = [
    "## CLI: `ipamkit`",
    "",
    `Commands: ${commands.map((c) => `\`${c.name()}\``).join(", ")}. Exit 0 done or clean, 1 a finding (audit, preflight) or nothing released, 2 an error (one line on stderr). Whereabouts has no CLI; its state is read with \`kubectl get ippools,overlappingrangeipreservations\`.`,
    "",
    "### Options of every command (the store)",
    "",
    ...(await table(common)),
  ];
  for (const c of commands) {
    const own = c.name() === "preflight" ? visible(c) : visible(c).filter((o) => !isCommon(o.long));
    const args = c.registeredArguments.map((a) => `\`<${a.name()}>\`: ${a.description}`);
    if (own.length === 0 && args.length === 0) continue;
    out.push("", `### \`ipamkit ${c.name()}\``, "", `${c.description()}${args.length > 0 ? `. Argument ${args.join("; ")}` : ""}.`);
    if (own.length > 0) out.push("", ...(await table(own)));
  }
  return out;
}
