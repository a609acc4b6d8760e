// Build step (build.mjs runs it, bundled, with plain `node`): writes <bundle>.v8cache for each bundle named.
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { writeCodeCache } from "./bundle-loader.js";

for (const path of process.argv.slice(2)) writeCodeCache(resolve(path), (file, data) => writeFileSync(file, data));
