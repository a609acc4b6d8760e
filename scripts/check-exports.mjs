#!/usr/bin/env node
// Fails when a published package's `exports` map and its build drift apart: every path named in
// `exports` must exist after the build, and every built entry in dist/ must be named in `exports`.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const problems = [];
for (const dir of readdirSync("packages")) {
  const pkgPath = join("packages", dir, "package.json");
  if (!existsSync(pkgPath)) continue;
  const pkg = JSON.parse(readFileSync(pkgPath, "utf8"));
  if (pkg.private) continue;
  const named = new Set();
  const walk = (node) => {
    if (typeof node === "string") named.add(node.replace(/^\.\//, ""));
    else if (node && typeof node === "object") for (const v of Object.values(node)) walk(v);
  };
  walk(pkg.exports);
  for (const file of named) {
    if (!existsSync(join("packages", dir, file))) problems.push(`${pkg.name}: exports names ${file}, which the build did not produce`);
  }
  const dist = join("packages", dir, "dist");
  const built = existsSync(dist) ? readdirSync(dist) : [];
  // a shared chunk (several entries) is fine when an exported file imports it: it is not an entry
  const imported = new Set();
  for (const file of named) {
    if (!file.startsWith("dist/") || !existsSync(join("packages", dir, file))) continue;
    for (const m of readFileSync(join("packages", dir, file), "utf8").matchAll(/from\s+["']\.\/([^"']+)["']/g)) imported.add(m[1]);
  }
  for (const file of built) {
    if (!/\.(c?js|d\.c?ts)$/.test(file) || named.has(`dist/${file}`)) continue;
    const stem = file.replace(/\.(c?js|d\.c?ts)$/, "");
    if ([...imported].some((i) => i === file || i.replace(/\.(c?js)$/, "") === stem)) continue;
    problems.push(`${pkg.name}: dist/${file} is built but not exported`);
  }
  if (pkg.sideEffects !== false) problems.push(`${pkg.name}: sideEffects must be false`);
}
for (const p of problems) console.error(p);
console.log(problems.length === 0 ? "exports and builds agree" : `${problems.length} problem(s)`);
process.exit(problems.length === 0 ? 0 : 1);
