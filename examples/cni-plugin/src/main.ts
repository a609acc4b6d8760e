import { existsSync, readFileSync } from "node:fs";
import { dispatch } from "@ipamkit/cni";
import { openStore } from "./open-store.js";

// The only file that touches the real process: environment, streams and the exit code.
function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (chunk) => {
      text += chunk;
    });
    process.stdin.on("end", () => resolve(text));
    process.stdin.on("error", reject);
  });
}

void dispatch({
  env: process.env,
  stdin: readStdin,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  fs: { exists: existsSync, readText: (path) => readFileSync(path, "utf8") },
  openStore,
}).then((code) => {
  process.exitCode = code;
});
