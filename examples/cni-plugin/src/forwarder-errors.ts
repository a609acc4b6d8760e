import { ABOUT_TEXT, CNI_CODES, DEFAULT_ERROR_VERSION, ERROR_MSG_BYTES } from "@ipamkit/cni";

/**
 * Every CNI error the native forwarder (src/forwarder.c) answers itself: its code, taken from
 * @ipamkit/cni's CNI_CODES, and its message as a printf format (`%s`, `%g` filled in by the C
 * code). build.mjs writes them into src/forwarder-codes.h (generated at every build, git-ignored;
 * forwarder-codes.test.ts fails when the header there is not what this table gives), so the C code
 * holds no code number and no fixed message of its own. Every other error answer is built by
 * @ipamkit/cni's errorJson.
 */
export const FORWARDER_ERRORS = {
  STDIN_UNREADABLE: { code: CNI_CODES.IO_FAILURE, format: "stdin cannot be read: %s" },
  STDIN_TOO_LARGE: { code: CNI_CODES.INVALID_CONFIG, format: "the network config on stdin is larger than %d MiB" },
  STDIN_TIMED_OUT: { code: CNI_CODES.IO_FAILURE, format: "stdin was not closed within %g s" },
  OUT_OF_MEMORY: { code: CNI_CODES.IO_FAILURE, format: "out of memory" },
  PLUGIN_PATH_UNKNOWN: {
    code: CNI_CODES.UNSUPPORTED_FIELD,
    format: "the plugin (ipamkit-node) cannot be run beside this binary: its own path is unknown",
  },
  PLUGIN_MISSING: { code: CNI_CODES.UNSUPPORTED_FIELD, format: "the plugin (%s) cannot be run beside this binary: %s" },
  PLUGIN_EXEC_FAILED: { code: CNI_CODES.UNSUPPORTED_FIELD, format: "the plugin (%s) cannot be run beside this binary: %s: %s" },
  STDIN_HANDOVER_FAILED: {
    code: CNI_CODES.UNSUPPORTED_FIELD,
    format: "the plugin (ipamkit-node) cannot be run: stdin cannot be handed over",
  },
  NODE_MISSING: {
    code: CNI_CODES.NOT_AVAILABLE,
    format:
      'this call needs direct mode (no agent_socket, or the agent refused it), and direct mode needs Node.js on the host: "node" is not in PATH (%s); ' +
      "configure agent_socket and run the ipamkit agent (DaemonSet), or install Node.js 20",
  },
  AGENT_TIMED_OUT: {
    code: CNI_CODES.TRY_AGAIN_LATER,
    format: "ipamkit agent at %s: %s after %g s (agent_timeout): the agent is hung or overloaded; it will not perform this call later",
  },
  AGENT_NOT_RUNNING_REQUIRED: {
    code: CNI_CODES.TRY_AGAIN_LATER,
    format: "ipamkit agent at %s: %s: the ipamkit agent (DaemonSet) is not running on this node (agent_required)",
  },
  AGENT_NOT_RUNNING_NO_NODE: {
    code: CNI_CODES.TRY_AGAIN_LATER,
    format:
      'ipamkit agent at %s: %s: the ipamkit agent (DaemonSet) is not running on this node; direct mode needs Node.js on the host and "node" is not in PATH',
  },
  AGENT_NOT_INSTALLED_REQUIRED: {
    code: CNI_CODES.TRY_AGAIN_LATER,
    format:
      "ipamkit agent at %s: %s: ipamkit's agent is not installed on this node (no socket; or its DaemonSet pod has not started yet): the ipamkit agent (DaemonSet) is not running on this node (agent_required)",
  },
  AGENT_NOT_INSTALLED_NO_NODE: {
    code: CNI_CODES.TRY_AGAIN_LATER,
    format:
      'ipamkit agent at %s: %s: ipamkit\'s agent is not installed on this node (no socket; or its DaemonSet pod has not started yet): the ipamkit agent (DaemonSet) is not running on this node; direct mode needs Node.js on the host and "node" is not in PATH',
  },
  DEL_NOT_JOURNALED: {
    code: CNI_CODES.TRY_AGAIN_LATER,
    format: "ipamkit agent at %s: %s: the agent is not running, and this DEL cannot be journaled in %s: %s; the runtime retries it",
  },
  AGENT_FAILED_REQUIRED: { code: CNI_CODES.TRY_AGAIN_LATER, format: "ipamkit agent at %s: %s (agent_required)" },
  AGENT_FAILED_NO_NODE: {
    code: CNI_CODES.TRY_AGAIN_LATER,
    format: 'ipamkit agent at %s: %s; direct mode needs Node.js on the host and "node" is not in PATH',
  },
  AGENT_REFUSED: { code: CNI_CODES.TRY_AGAIN_LATER, format: "ipamkit agent at %s: %s" },
  AGENT_ANSWER_UNUSABLE: {
    code: CNI_CODES.TRY_AGAIN_LATER,
    format: "ipamkit agent at %s: %s; the agent may have received the call, so it is not run again directly: the runtime retries",
  },
} as const satisfies Record<string, { code: number; format: string }>;

/**
 * The forwarder's other fixed texts: the about text (@ipamkit/cni's), the note of a call run
 * directly, the reasons it gives for an agent that did not answer (the `%s` after the socket in
 * the AGENT_* messages), the note of a journaled DEL and the reasons a DEL was not journaled (the
 * last `%s` of DEL_NOT_JOURNALED).
 */
export const FORWARDER_TEXTS = {
  ABOUT: ABOUT_TEXT,
  RUNNING_DIRECTLY: "ipamkit: ipamkit agent at %s: %s; running the call directly\n",
  PEER_REFUSED: "refusing it: the socket is served by uid %ld, which is neither root nor agent_uid (%s)",
  REQUEST_TOO_LARGE: "the request is too large",
  NOT_THIS_PROTOCOL: "answer is not a response of this protocol",
  TIMED_OUT: "timed out",
  NOT_JSON: "answer is not JSON",
  NO_ANSWER: "closed without an answer",
  DEL_JOURNALED: "ipamkit: ipamkit agent at %s: %s: DEL journaled as %s/%s; the agent releases it when it starts\n",
  JOURNAL_NO_DIR: "agent_journal_dir is not an absolute path of at most %d bytes",
  JOURNAL_NO_KEY:
    "the network name, CNI_CONTAINERID or CNI_IFNAME cannot name a record (empty, not printable, or longer than %d bytes together)",
  JOURNAL_TOO_LARGE: "the record would be larger than %d bytes",
  JOURNAL_FULL: "the journal is full (%d records)",
  JOURNAL_UNSAFE: "the directory may not hold records: it is not root's, or group or others may write it",
  JOURNAL_BUSY: "the journal stayed locked for %g s",
  JOURNAL_IO: "%s: %s",
} as const satisfies Record<string, string>;

/** IPAMKIT_CODE_<the CNI_CODES name of `code`>. */
function codeName(code: number): string {
  const found = Object.entries(CNI_CODES).find(([, value]) => value === code);
  if (found === undefined) throw new Error(`forwarder-errors: ${code} is not in CNI_CODES`);
  return `IPAMKIT_CODE_${found[0]}`;
}

/** A C string literal of ASCII text (newlines allowed). */
function cString(text: string): string {
  if (!/^[\x20-\x7e\n]*$/.test(text)) throw new Error(`forwarder-errors: not printable ASCII: ${JSON.stringify(text)}`);
  return `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`;
}

/**
 * src/forwarder-codes.h: the bound of an error's msg (IPAMKIT_ERROR_MSG_BYTES) and its default
 * version (IPAMKIT_ERROR_VERSION), each fixed text as IPAMKIT_T_<NAME>, each CNI code as IPAMKIT_CODE_<NAME>, and each forwarder error as
 * IPAMKIT_E_<NAME>, which expands to `<code>, "<format>"` (the two arguments of forwarder.c's cni_fail).
 */
export function forwarderCodesHeader(): string {
  const lines = [
    "// Generated by build.mjs from packages/cni/src/errors.ts (CNI_CODES) and src/forwarder-errors.ts",
    "// (FORWARDER_ERRORS). Do not edit: run `node build.mjs`.",
    "#ifndef IPAMKIT_FORWARDER_CODES_H",
    "#define IPAMKIT_FORWARDER_CODES_H",
    `#define IPAMKIT_ERROR_MSG_BYTES ${ERROR_MSG_BYTES}`,
    `#define IPAMKIT_ERROR_VERSION ${cString(DEFAULT_ERROR_VERSION)}`,
    ...Object.entries(CNI_CODES).map(([name, code]) => `#define IPAMKIT_CODE_${name} ${code}`),
    ...Object.entries(FORWARDER_TEXTS).map(([name, text]) => `#define IPAMKIT_T_${name} ${cString(text)}`),
    ...Object.entries(FORWARDER_ERRORS).map(
      ([name, { code, format }]) => `#define IPAMKIT_E_${name} ${codeName(code)}, ${cString(format)}`,
    ),
    "#endif",
  ];
  return `${lines.join("\n")}\n`;
}
