// dist/ipamkit: the CNI binary a runtime executes, as a small static program that needs nothing
// else on the host when the node-local agent serves the network.
//
// A Node process costs ~100 ms of CPU to start on a 2-core machine — more than the IPAM work of a
// call answered by the agent. This program is the one place where a call's route is decided
// (forwarder-route.h: the rules of agentSettings() in @ipamkit/cni, checked against it by
// forwarder.test.ts); the agent serves what it is sent and dist/ipamkit-node never routes. It
// reads stdin once, parses it once, and answers VERSION itself:
// - agent configured: it sends the call with its deadline (`agent_timeout`, ≤ 30 s) to the socket,
//   after checking that the socket's peer (SO_PEERCRED) is root or `agent_uid`, and relays the
//   answer byte for byte. No answer in time: code 11 (the agent refuses work past the deadline).
//   Agent not running: code 11 with `agent_required` or without Node on the host, else direct mode.
//   Connected but no usable answer: code 11 — the agent may have performed the call, so it is
//   never run a second time in direct mode (an ADD could hand out two addresses).
// - otherwise, direct mode: `node ipamkit-node` beside this file, same environment and stdin; no
//   `node` in an absolute PATH entry is a CNI error, never 127.
// It runs as root with a config anyone allowed to create a NetworkAttachmentDefinition wrote: stdin
// is bounded in size and time before anything is built, SIGPIPE is ignored (a closed stdout is an
// error, not a signal), and node-level settings come only from the node (forwarder-route.h).
// Its own errors' codes and messages are generated from TypeScript (forwarder-codes.h, written by
// build.mjs from src/forwarder-errors.ts and @ipamkit/cni's CNI_CODES).
// Protocol: packages/agent/src/protocol.ts ("raw" frame).
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "forwarder-codes.h"
#include "forwarder-route.h"

#include "forwarder-generated.h"
#if !defined(IPAMKIT_VERSIONS_JSON) || !defined(IPAMKIT_DEFAULT_VERSION)
#error "build.mjs generates the IPAMKIT_* macros from packages/cni; build with `node build.mjs`"
#endif

extern char **environ;

// The agent refuses larger requests (MAX_REQUEST_BYTES); such a call goes to direct mode.
#define MAX_REQUEST_BYTES (4 * 1024 * 1024)
// stdin larger than this, or not closed within this time, is refused before anything is built. The
// time is the longest agent_timeout (kubelet's budget for a call is of that order): a runtime on a
// loaded node may take seconds to hand stdin over (200 calls at once on 2 busy cores took over 5 s).
#define MAX_STDIN_BYTES (16 * 1024 * 1024)
#define STDIN_DEADLINE_MS (IPAMKIT_AGENT_TIMEOUT_MAX * 1000.0)
#define MAX_ANSWER_BYTES (64 * 1024 * 1024)
// The search path when the runtime gives none.
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Each page a process touches first costs a fault, and faults are most of what a short process
// costs (on a VM ~25 µs each, more than this whole program's own work): the buffers of a usual
// call are static (untouched pages cost nothing) and only a larger one moves to the heap.
#define STATIC_BYTES (64 * 1024)
// The smallest free space asked for per read.
#define READ_CHUNK 4096

struct buf {
  char *data;
  size_t len, cap;
  int on_heap;
};

#define STATIC_BUF(storage) ((struct buf){.data = (storage), .cap = sizeof(storage)})

static int reserve(struct buf *b, size_t extra) {
  if (b->len + extra <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + extra) cap *= 2;
  char *grown = b->on_heap ? realloc(b->data, cap) : malloc(cap);
  if (!grown) return -1;
  if (!b->on_heap && b->len) memcpy(grown, b->data, b->len);
  b->data = grown;
  b->cap = cap;
  b->on_heap = 1;
  return 0;
}

static int append(struct buf *b, const char *s, size_t n) {
  if (reserve(b, n)) return -1;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  return 0;
}

static int append_str(struct buf *b, const char *s) { return append(b, s, strlen(s)); }

// A JSON string escaped as JSON.stringify does (quotes, backslashes, control characters); other
// bytes as they are (the agent decodes UTF-8 as Node's readFileSync(0, "utf8") does, invalid sequences included).
static int append_json_string(struct buf *b, const char *s, size_t n) {
  if (append(b, "\"", 1)) return -1;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    const char *shortcut = c == '\b' ? "b" : c == '\f' ? "f" : c == '\n' ? "n" : c == '\r' ? "r" : c == '\t' ? "t" : NULL;
    if (c == '"' || c == '\\' || shortcut) {
      esc[0] = '\\';
      esc[1] = shortcut ? shortcut[0] : (char)c;
      if (append(b, esc, 2)) return -1;
    } else if (c < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", c);
      if (append(b, esc, 6)) return -1;
    } else if (append(b, (const char *)&c, 1)) {
      return -1;
    }
  }
  return append(b, "\"", 1);
}

static double now_ms(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1e6;
}

enum stdin_outcome { STDIN_READ, STDIN_FAILED, STDIN_TOO_LARGE, STDIN_TIMED_OUT };

// All of fd 0, at most MAX_STDIN_BYTES, within STDIN_DEADLINE_MS (a pipe nobody closes, a blocking
// or non-blocking one: every read waits in poll() first). STDIN_FAILED leaves errno set.
static enum stdin_outcome read_stdin(struct buf *b) {
  double until = now_ms(CLOCK_MONOTONIC) + STDIN_DEADLINE_MS;
  for (;;) {
    double left = until - now_ms(CLOCK_MONOTONIC);
    if (left <= 0) return STDIN_TIMED_OUT;
    struct pollfd p = {.fd = 0, .events = POLLIN};
    int ready = poll(&p, 1, (int)left + 1);
    if (ready < 0 && errno != EINTR) return STDIN_FAILED;
    if (ready <= 0) continue;
    if (reserve(b, READ_CHUNK)) return STDIN_FAILED;
    size_t room = b->cap - b->len, allowed = MAX_STDIN_BYTES + 1 - b->len;
    ssize_t n = read(0, b->data + b->len, room < allowed ? room : allowed);
    if (n > 0) {
      b->len += (size_t)n;
      if (b->len > MAX_STDIN_BYTES) return STDIN_TOO_LARGE;
    } else if (n == 0) {
      return STDIN_READ;
    } else if (errno != EINTR && errno != EAGAIN) {
      return STDIN_FAILED;
    }
  }
}

static int write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

// Where stdin's JSON value starts (NULL: not one JSON document). Parsed once per process, whoever asks first.
static const char *config_document(const struct buf *in) {
  static const struct buf *parsed;
  static const char *value;
  if (parsed != in) value = json_document(in->data, in->len), parsed = in;
  return value;
}

// JSON.parse(stdin).cniVersion when it is a non-empty string, else `fallback`.
static void config_version(const struct buf *in, char *out, size_t size, const char *fallback) {
  const char *end = in ? in->data + in->len : NULL;
  const char *v = in ? json_member(config_document(in), end, "cniVersion") : NULL;
  if (!v || *v != '"' || json_decode_string(v, end, out, size) || !out[0]) snprintf(out, size, "%s", fallback);
}

// A JSON string of at most `max` bytes once escaped: cut at a character boundary, marked "…".
static int append_json_string_max(struct buf *b, const char *s, size_t n, size_t max) {
  size_t start = b->len;
  if (append_json_string(b, s, n)) return -1;
  if (b->len - start <= max + 2) return 0;
  // too long: keep the escaped text that fits (never half an escape or half a character), then "…"
  b->len = start;
  size_t used = 2 + 3;  // the quotes and "…"
  size_t keep = 0;
  for (; keep < n; keep++) {
    unsigned char c = (unsigned char)s[keep];
    size_t cost = c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t' ? 2 : c < 0x20 ? 6 : 1;
    if (used + cost > max + 2) break;
    used += cost;
  }
  while (keep > 0 && keep < n && ((unsigned char)s[keep] & 0xC0) == 0x80) keep--;
  if (append_json_string(b, s, keep)) return -1;
  b->len--;  // the closing quote
  return append_str(b, "\xE2\x80\xA6\"");
}

// A CNI error on stdout in the config's cniVersion; exit code 1. `code` and `format` come from
// forwarder-codes.h (IPAMKIT_E_*, generated from the TypeScript tables); bounded as @ipamkit/cni's
// errorJson bounds every other error answer (msg at most IPAMKIT_ERROR_MSG_BYTES, the whole answer within 4 KiB).
__attribute__((format(printf, 3, 4))) static int cni_fail(const struct buf *in, int code, const char *format, ...) {
  char version[256], text[2 * IPAMKIT_ERROR_MSG_BYTES];
  config_version(in, version, sizeof version, IPAMKIT_ERROR_VERSION);
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof text, format, args);
  va_end(args);
  struct buf msg = {0};
  char number[16];
  snprintf(number, sizeof number, "%d", code);
  if (append_str(&msg, "{\"cniVersion\":") || append_json_string_max(&msg, version, strlen(version), 64) ||
      append_str(&msg, ",\"code\":") || append_str(&msg, number) || append_str(&msg, ",\"msg\":") || append_json_string_max(&msg, text, strlen(text), IPAMKIT_ERROR_MSG_BYTES) ||
      append_str(&msg, "}\n"))
    return 1;
  write_all(1, msg.data, msg.len);
  return 1;
}

// VERSION (the supported versions generated from @ipamkit/cni) and the "about" text, as skel does.
static int answer_version(const char *command, struct buf *in) {
  if (!command || !*command) {
    write_all(2, IPAMKIT_T_ABOUT, strlen(IPAMKIT_T_ABOUT));
    return 0;
  }
  // VERSION ignores an unreadable stdin, like the reference skel
  if (read_stdin(in) != STDIN_READ) in->len = 0;
  char version[4096];
  config_version(in, version, sizeof version, IPAMKIT_DEFAULT_VERSION);
  struct buf out = {0};
  if (append_str(&out, "{\"cniVersion\":") || append_json_string(&out, version, strlen(version)) ||
      append_str(&out, ",\"supportedVersions\":[" IPAMKIT_VERSIONS_JSON "]}\n"))
    return cni_fail(in, IPAMKIT_E_OUT_OF_MEMORY);
  return write_all(1, out.data, out.len) ? 1 : 0;
}

// the agent exchange (uses the buffer helpers above)
#include "forwarder-agent.h"

// The first executable `node` in an absolute PATH entry; 0 when there is none. An empty or relative
// entry (which `env` reads as the working directory) is skipped: root never runs ./node.
static int find_node(char *out, size_t size) {
  const char *path = getenv("PATH");
  if (!path || !*path) path = DEFAULT_PATH;
  for (const char *at = path; *at;) {
    const char *colon = strchr(at, ':');
    size_t n = colon ? (size_t)(colon - at) : strlen(at);
    struct stat st;
    if (n > 0 && at[0] == '/' && n + sizeof "/node" <= size) {
      memcpy(out, at, n);
      memcpy(out + n, "/node", sizeof "/node");
      if (access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode)) return 1;
    }
    at += n + (colon ? 1 : 0);
  }
  return 0;
}

// The search path as find_node() reads it, for a message.
static const char *search_path(void) {
  const char *path = getenv("PATH");
  return path && *path ? path : DEFAULT_PATH;
}

// Direct mode: `node ipamkit-node` (beside the real file of this program) on the same stdin. Never
// returns but with a CNI error when that is impossible; `note` goes to stderr first.
static int run_direct(const struct buf *in, const char *note) {
  char path[PATH_MAX], node[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
  if (n <= 0) return cni_fail(in, IPAMKIT_E_PLUGIN_PATH_UNKNOWN);
  path[n] = '\0';
  char *slash = strrchr(path, '/');
  strcpy(slash ? slash + 1 : path, "ipamkit-node");
  if (access(path, R_OK) != 0) return cni_fail(in, IPAMKIT_E_PLUGIN_MISSING, path, strerror(errno));
  if (!find_node(node, sizeof node)) return cni_fail(in, IPAMKIT_E_NODE_MISSING, search_path());
  int fd = memfd_create("ipamkit-stdin", 0);
  size_t done = 0;
  while (fd >= 0 && done < in->len) {
    ssize_t w = write(fd, in->data + done, in->len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  if (fd < 0 || done < in->len || lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) < 0) return cni_fail(in, IPAMKIT_E_STDIN_HANDOVER_FAILED);
  if (fd > 0) close(fd);
  if (note) write_all(2, note, strlen(note));
  signal(SIGPIPE, SIG_DFL);  // as a runtime would start it
  char *argv[] = {node, path, NULL};
  execv(node, argv);
  return cni_fail(in, IPAMKIT_E_PLUGIN_EXEC_FAILED, path, node, strerror(errno));
}

// The agent gave no answer: code 11, or direct mode when that is allowed and possible.
static int agent_failed(const struct route *route, enum outcome outcome, const char *why, const struct buf *in) {
  char node[PATH_MAX];
  const char *socket = route->socket;
  if (outcome == TIMED_OUT) return cni_fail(in, IPAMKIT_E_AGENT_TIMED_OUT, socket, why, route->timeout_seconds);
  if (outcome == REFUSED) return cni_fail(in, IPAMKIT_E_AGENT_REFUSED, socket, why);
  if (outcome == MAY_HAVE_RECEIVED) return cni_fail(in, IPAMKIT_E_AGENT_ANSWER_UNUSABLE, socket, why);
  if (outcome == UNREACHABLE && route->required) return cni_fail(in, IPAMKIT_E_AGENT_NOT_RUNNING_REQUIRED, socket, why);
  if (outcome == FAILED && route->required) return cni_fail(in, IPAMKIT_E_AGENT_FAILED_REQUIRED, socket, why);
  if (!find_node(node, sizeof node))
    return outcome == UNREACHABLE ? cni_fail(in, IPAMKIT_E_AGENT_NOT_RUNNING_NO_NODE, socket, why)
                                  : cni_fail(in, IPAMKIT_E_AGENT_FAILED_NO_NODE, socket, why);
  char note[PATH_MAX + 1024];
  snprintf(note, sizeof note, IPAMKIT_T_RUNNING_DIRECTLY, socket, why);
  return run_direct(in, note);
}

int main(void) {
  const char *command = getenv("CNI_COMMAND");
  static char in_space[STATIC_BYTES], request_space[STATIC_BYTES], answer_space[STATIC_BYTES];
  struct buf in = STATIC_BUF(in_space);
  // a runtime that closed stdout gets an error from write(), and this program's exit code
  signal(SIGPIPE, SIG_IGN);
  if (!command || !*command || strcmp(command, "VERSION") == 0) return answer_version(command, &in);
  enum stdin_outcome read = read_stdin(&in);
  if (read == STDIN_TOO_LARGE) return cni_fail(NULL, IPAMKIT_E_STDIN_TOO_LARGE, MAX_STDIN_BYTES >> 20);
  if (read == STDIN_TIMED_OUT) return cni_fail(NULL, IPAMKIT_E_STDIN_TIMED_OUT, STDIN_DEADLINE_MS / 1000);
  if (read != STDIN_READ) return cni_fail(&in, IPAMKIT_E_STDIN_UNREADABLE, strerror(errno));
  static struct route route;
  static char flat_space[IPAMKIT_FLAT_FILE_MAX_BYTES + 1];
  struct doc flat = read_flat_file(flat_space, sizeof flat_space);
  decide_route(config_document(&in), in.data + in.len, &flat, &route);
  if (!route.agent) return run_direct(&in, NULL);
  double until = now_ms(CLOCK_MONOTONIC) + route.timeout_seconds * 1000.0;
  struct buf req = STATIC_BUF(request_space), answer = STATIC_BUF(answer_space);
  if (build_request(&req, route.socket, now_ms(CLOCK_REALTIME) + route.timeout_seconds * 1000.0, &in) || req.len > MAX_REQUEST_BYTES)
    return agent_failed(&route, FAILED, IPAMKIT_T_REQUEST_TOO_LARGE, &in);
  char why[256];
  enum outcome outcome = ask_agent(&route, &req, &answer, until, why, sizeof why);
  if (outcome != ANSWERED) return agent_failed(&route, outcome, why, &in);
  int code = relay(&answer);
  if (code >= 0) return code;
  return agent_failed(&route, MAY_HAVE_RECEIVED, IPAMKIT_T_NOT_THIS_PROTOCOL, &in);
}
