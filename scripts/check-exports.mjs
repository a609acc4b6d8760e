#!/usr/bin/env node
// Fails when a published package's `exports` map and its build drift apart: every path named in
// `exports` must exist after the build, and every built entry in dist/ must be named in `exports`.
// It also fails when a published package's package.json is not complete for npm (description,
// keywords, license with a LICENSE file at the root, repository with its directory, engines.node).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const problems = [];
if (!existsSync("LICENSE")) problems.push("LICENSE: missing at the repository root (the packages' license field refers to it)");

/** What npm shows and needs of a published package: every field present and pointing at this repository. */
function metadataProblems(pkg, dir) {
  const out = [];
  const need = (ok, what) => {
    if (!ok) out.push(`${pkg.name}: package.json ${what}`);
  };
  need(typeof pkg.description === "string" && pkg.description.trim() !== "", 'needs a "description"');
  need(
    Array.isArray(pkg.keywords) && pkg.keywords.length > 0 && pkg.keywords.every((k) => typeof k === "string" && k !== ""),
    'needs "keywords"',
  );
  need(pkg.license === "Apache-2.0", 'needs "license": "Apache-2.0" (the root LICENSE)');
  const repo = pkg.repository;
  need(
    typeof repo === "object" && repo !== null && typeof repo.url === "string" && repo.url !== "",
    'needs "repository": { "type", "url", "directory" }',
  );
  need(repo?.directory === `packages/${dir}`, `needs "repository.directory": "packages/${dir}"`);
  need(typeof pkg.engines?.node === "string" && pkg.engines.node !== "", 'needs "engines": { "node": ">=20" }');
  return out;
}

for (const dir of readdirSync("packages")) {
  const pkgPath = join("packages", dir, "package.json");
  if (!existsSync(pkgPath)) continue;
  const pkg = JSON.parse(readFileSync(pkgPath, "utf8"));
  if (pkg.private) continue;
  problems.push(...metadataProblems(pkg, dir));
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
console.log(problems.length === 0 ? "exports and builds agree; package metadata complete" : `${problems.length} problem(s)`);
process.exit(problems.length === 0 ? 0 : 1);
