import { Command, CommanderError } from "commander";
import pkg from "../package.json" with { type: "json" };
import { CliError, EXIT, oneLine } from "./errors.js";
import { addCommands, type Io } from "./program.js";

/** The `ipamkit` program; `io` receives its output and exit code. */
export function buildProgram(io: Io): Command {
  const program = new Command("ipamkit")
    .description("Inspect and repair ipamkit / Whereabouts IPAM state on the file, etcd or Kubernetes store.")
    .version(pkg.version)
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.out(s.replace(/\n$/, "")),
      writeErr: (s) => io.err(s.replace(/\n$/, "")),
      // commander puts "(Did you mean …?)" on a line of its own: one line it is
      outputError: (s, write) => write(s.replace(/\n\(Did you mean/, " (did you mean").trimEnd()),
    });
  // subcommands inherit exitOverride, the output configuration and suggestions from here
  addCommands(program, io);
  return program;
}

/**
 * Runs one command line; resolves with the exit code. 0 done or clean, 1 the audit found a
 * problem (or a release released nothing), 2 an error — always one line on stderr, never a stack.
 */
export async function run(argv: readonly string[], io?: Partial<Io>): Promise<number> {
  let code: number = EXIT.ok;
  const full: Io = {
    out: (t) => process.stdout.write(`${t}\n`),
    err: (t) => process.stderr.write(`${t}\n`),
    stderrIsTty: process.stderr.isTTY === true,
    ...io,
    exit: (c) => {
      code = c;
    },
  };
  const program = buildProgram(full);
  try {
    if (argv.length === 0) {
      full.err(program.helpInformation().trimEnd());
      return EXIT.error;
    }
    await program.parseAsync([...argv], { from: "user" });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.error;
    full.err(`error: ${error instanceof CliError ? error.message : oneLine(error)}`);
    return error instanceof CliError ? error.exitCode : EXIT.error;
  }
}
