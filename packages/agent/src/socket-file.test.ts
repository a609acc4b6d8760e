import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ts from "typescript";
import { afterEach, expect, it } from "vitest";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// Runs in a plain `node` (CommonJS, no test runner, no TypeScript loader: those stat files between
// the agent's steps and hide the bug), as the built agent does: a stale socket (its listener
// SIGKILLed) is replaced, then a symlinked package is resolved. pino is a pnpm symlink in this
// package's node_modules.
const DRIVER = `
const { createRequire } = require("node:module");
const { spawnSync } = require("node:child_process");
const { lstatSync } = require("node:fs");
const { prepareSocketPath } = require("./socket-file.cjs");
const [socketPath, from] = process.argv.slice(2);
const req = createRequire(from);
req.resolve("pino"); // the loader's realpath cache knows the leading directories, as in any process that loaded modules
const listen = "require('node:net').createServer().listen(process.argv[1], () => process.kill(process.pid, 'SIGKILL'))";
spawnSync(process.execPath, ["-e", listen, socketPath]);
if (!lstatSync(socketPath).isSocket()) throw new Error("no stale socket was left");
lstatSync(__dirname); // this check's own stat of the socket must not be what the agent's step is judged by
prepareSocketPath(socketPath).then(() => process.stdout.write(req.resolve("pino/file.js")));
`;

it("after replacing a stale socket, require() still resolves a symlinked package at its real path (nodejs/node#51142)", () => {
  const dir = mkdtempSync(join(tmpdir(), "ipamkit-socket-file-"));
  dirs.push(dir);
  const source = readFileSync(join(import.meta.dirname, "socket-file.ts"), "utf8");
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
  });
  writeFileSync(join(dir, "socket-file.cjs"), outputText);
  writeFileSync(join(dir, "driver.cjs"), DRIVER);
  const link = join(import.meta.dirname, "..", "node_modules", "pino", "file.js");
  const expected = realpathSync.native(link);
  expect(expected).not.toBe(link);
  const run = spawnSync(process.execPath, [join(dir, "driver.cjs"), join(dir, "agent.sock"), import.meta.filename], { encoding: "utf8" });
  expect(run.stderr).toBe("");
  expect(run.stdout).toBe(expected);
});
