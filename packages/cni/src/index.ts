export type { AgentSettings } from "./agent-settings.js";
export {
  AGENT_SOCKET_MAX_BYTES,
  AGENT_TIMEOUT_DEFAULT_SECONDS,
  agentSettings,
  jsonNesting,
  NODE_AGENT_KEYS,
  nodeFlatObject,
  ROUTE_JSON_MAX_NESTING,
} from "./agent-settings.js";
export type { CommandContext } from "./commands.js";
export { ConfigError, loadIpamConfig, whereaboutsEtcdKeys } from "./config.js";
export type { ConfigCache, ConfigCacheOptions, PreparedConfig } from "./config-cache.js";
export { createConfigCache, prepareConfig } from "./config-cache.js";
export { hostConfigFs } from "./config-host-fs.js";
export { NODE_KEYS } from "./config-node-keys.js";
export { DEFAULT_FLAT_FILE_PATHS, FLAT_FILE_MAX_BYTES, NODE_CONFIGURATION_PATH_ENV } from "./config-paths.js";
export { NODE_NAME } from "./config-schema.js";
export type { JournalKey, JournalRecord } from "./del-journal.js";
export {
  CHART_JOURNAL_DIR,
  JOURNAL_DIR_MAX_BYTES,
  JOURNAL_MAX_RECORDS,
  JOURNAL_NAME_MAX_BYTES,
  JOURNAL_RECORD_MAX_BYTES,
  JOURNAL_RECORD_PREFIX,
  JOURNAL_TEMP_PREFIX,
  JOURNAL_VERSION,
  journalDirOf,
  journalKeyOf,
  journalRecordName,
  journalRecordNameOf,
  parseJournalRecord,
} from "./del-journal.js";
export type { DispatcherOptions } from "./dispatcher.js";
export { ABOUT_TEXT, dispatch } from "./dispatcher.js";
export { checkEnv, ENV_TABLE, parseCniArgs, readEnv } from "./env.js";
export {
  CNI_CODES,
  CniError,
  DEFAULT_ERROR_VERSION,
  ERROR_MSG_BYTES,
  errorAnswer,
  errorJson,
  MAX_ERROR_ANSWER_BYTES,
  toCniError,
} from "./errors.js";
export type { NodeSliceAnswer, ReadNodeSlice } from "./node-slice.js";
export type { AssignedIp } from "./result.js";
export { buildResult, parsePrevResult } from "./result.js";
export type { CniArgs, CniCommand, CniVersion, ConfigFs, Datastore, Dns, IpamConfig, Route } from "./types.js";
export { SUPPORTED_VERSIONS } from "./types.js";
export { commandAllowed, compareVersions, isSupported, versionResult } from "./versions.js";
export type { WhereaboutsDifference } from "./whereabouts-differences.js";
export { WHEREABOUTS_DIFFERENCES } from "./whereabouts-differences.js";
