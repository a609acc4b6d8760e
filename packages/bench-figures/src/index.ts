export { type FigureFiles, generate, REPO_FILES, stale, write } from "./figures.js";
export { currentCommit, type RawEnvelope, REPO_ROOT, RESULTS_DIR, rawEnvelope, writeRawResult } from "./raw-file.js";
export { RawFileError } from "./raw-set.js";
export { MissingMarkersError } from "./render.js";
export { ipamShare, isPodRequest, type RequestCounts, totalOf } from "./requests.js";
