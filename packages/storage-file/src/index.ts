export type { FileStoreOptions } from "./file-store.js";
export { createFileStore, DEFAULT_FILE_STORE_DIR, STORE_NAME } from "./file-store.js";
