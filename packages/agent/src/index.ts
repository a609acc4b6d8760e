export type { ForwardOptions } from "./client.js";
export { AgentUnavailableError, agentStats, forwardToAgent } from "./client.js";
export { KeyedQueue } from "./pool-queue.js";
export type { AgentRequest, AgentResponse, AgentStatsRequest } from "./protocol.js";
export { cniEnvOf, MAX_REQUEST_BYTES, PROTOCOL_VERSION } from "./protocol.js";
export type { Agent, AgentOptions, AgentStats } from "./server.js";
export { startAgent } from "./server.js";
export { StoreCache, storeIdentity } from "./store-cache.js";
