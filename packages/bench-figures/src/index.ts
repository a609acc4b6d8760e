export { currentCommit, type RawEnvelope, REPO_ROOT, RESULTS_DIR, rawEnvelope, writeRawResult } from "./raw-file.js";
