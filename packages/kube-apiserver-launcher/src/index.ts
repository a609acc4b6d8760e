export { type Binaries, BUILD_MODULE_DIR, BUILD_SCRIPT, binaryPaths, cacheDir, findBinaries, requiredVersion } from "./binaries.js";
export { makeServingCertificates, type ServingCertificates } from "./certs.js";
export { type KubeApiserver, type KubeApiserverOptions, PROJECT_CRDS, startKubeApiserver, TEST_TOKEN } from "./launcher.js";
