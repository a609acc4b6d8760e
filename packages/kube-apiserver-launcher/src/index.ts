export { type Binaries, BUILD_MODULE_DIR, BUILD_SCRIPT, binaryPaths, cacheDir, findBinaries, requiredVersion } from "./binaries.js";
export { makeServingCertificates, type ServingCertificates } from "./certs.js";
export { type KubeApiserver, type KubeApiserverOptions, PROJECT_CRDS, startKubeApiserver, TEST_TOKEN } from "./launcher.js";
export {
  findWhereabouts,
  WHEREABOUTS_BUILD_SCRIPT,
  WHEREABOUTS_MODULE,
  WHEREABOUTS_MODULE_DIR,
  type WhereaboutsBuild,
  type WhereaboutsCrds,
  whereaboutsCrdFiles,
  whereaboutsPaths,
} from "./whereabouts.js";
