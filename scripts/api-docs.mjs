#!/usr/bin/env node
// `pnpm docs:api`: the API reference of the published packages, built by TypeDoc into dist/api
// (git-ignored). The entry points are every published package's `exports` map (its
// `@ipamkit/source` paths), so a new subpath export is documented without touching this file.
// Exits 1 when TypeDoc reports an error (a static check of `npm test`, scripts/run.mjs).
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Application, ReflectionKind } from "typedoc";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist", "api");

/** Each published package's exported source files, named as they are imported (`@ipamkit/agent/client`). */
function entryPoints() {
  const entries = [];
  for (const dir of readdirSync(join(root, "packages")).sort()) {
    const pkgPath = join(root, "packages", dir, "package.json");
    if (!existsSync(pkgPath)) continue;
    const pkg = JSON.parse(readFileSync(pkgPath, "utf8"));
    if (pkg.private) continue;
    for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
      const source = typeof target === "object" && target !== null ? target["@ipamkit/source"] : undefined;
      if (typeof source !== "string") continue;
      const name = subpath === "." ? pkg.name : `${pkg.name}/${subpath.replace(/^\.\//, "")}`;
      entries.push({ name, dir, file: join(root, "packages", dir, source) });
    }
  }
  return entries;
}

const entries = entryPoints();
const dirs = [...new Set(entries.map((e) => e.dir))];
// A tsconfig beside the output (dist/ is git-ignored): the published packages' sources, no tests.
// It lives under the root so that `types: ["node"]` resolves from the root node_modules.
const tsconfig = join(root, "dist", "typedoc.tsconfig.json");
mkdirSync(dirname(tsconfig), { recursive: true });
writeFileSync(
  tsconfig,
  `${JSON.stringify(
    {
      extends: "../tsconfig.base.json",
      compilerOptions: { noEmit: true },
      include: dirs.map((dir) => `../packages/${dir}/src`),
      exclude: ["../packages/*/src/**/*.test.ts", "../packages/*/src/test-support.ts"],
    },
    null,
    2,
  )}\n`,
);

const app = await Application.bootstrapWithPlugins({
  name: "ipamkit API",
  entryPoints: entries.map((e) => e.file),
  entryPointStrategy: "resolve",
  tsconfig,
  out,
  readme: "none",
  disableGit: true,
  sourceLinkTemplate: "https://github.com/ipamkit/ipamkit/blob/main/{path}#L{line}",
  excludePrivate: true,
  excludeInternal: true,
  logLevel: "Warn",
});
const project = await app.convert();
if (project === undefined || app.logger.hasErrors()) {
  console.error("docs:api: TypeDoc could not convert the published packages (errors above)");
  process.exit(1);
}
// TypeDoc names a module by its path (`agent/src/client`); name it as it is imported instead.
const byFile = new Map(entries.map((e) => [e.file, e.name]));
for (const module of project.getChildrenByKind(ReflectionKind.Module)) {
  const file = module.sources?.[0]?.fullFileName;
  const name = file === undefined ? undefined : byFile.get(resolve(file));
  if (name !== undefined) module.name = name;
}
// links to symbols that are not exported: warnings, shown but not fatal
app.validate(project);
await app.generateDocs(project, out);
if (app.logger.hasErrors()) {
  console.error("docs:api: TypeDoc reported errors (above)");
  process.exit(1);
}
console.log(`docs:api: ${entries.length} entry points of ${dirs.length} packages → ${relative(root, out)}/index.html`);
