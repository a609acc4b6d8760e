// dist/ipamkit: the CNI binary a runtime executes, as a small static program that needs nothing
// else on the host when the node-local agent serves the network.
//
// A Node process costs ~100 ms of CPU to start on a 2-core machine — more than the IPAM work of a
// call answered by the agent. This program decides, once, where a call goes (forwarder-route.h:
// the same rules as agentSettings() in @ipamkit/cni) and answers VERSION itself:
// - agent configured: it sends the call with its deadline (`agent_timeout`, ≤ 30 s) to the socket,
//   after checking that the socket's peer (SO_PEERCRED) is root or `agent_uid`, and relays the
//   answer byte for byte. No answer in time: code 11 (the agent refuses work past the deadline).
//   Agent not running: code 11 with `agent_required` or without Node on the host, else direct mode.
// - otherwise, direct mode: `node ipamkit-node` beside this file, same environment and stdin, told
//   that the route is decided (IPAMKIT_ROUTE=direct); no `node` in PATH is a CNI error, never 127.
// Protocol: packages/agent/src/protocol.ts ("raw" frame).
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
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
#include "forwarder-route.h"

#if !defined(IPAMKIT_VERSIONS_JSON) || !defined(IPAMKIT_VERSIONS_TEXT) || !defined(IPAMKIT_DEFAULT_VERSION)
#error "build.mjs generates the IPAMKIT_* macros from packages/cni; build with `node build.mjs`"
#endif

extern char **environ;

// The agent refuses larger requests (MAX_REQUEST_BYTES); such a call goes to direct mode.
#define MAX_REQUEST_BYTES (4 * 1024 * 1024)
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
// bytes as they are (the agent decodes UTF-8 as the Node forwarder does, invalid sequences included).
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

// All of fd 0 (waiting when a runtime hands over a non-blocking pipe).
static int read_stdin(struct buf *b) {
  for (;;) {
    if (reserve(b, READ_CHUNK)) return -1;
    ssize_t n = read(0, b->data + b->len, b->cap - b->len);
    if (n > 0) {
      b->len += (size_t)n;
    } else if (n == 0) {
      return 0;
    } else if (errno == EAGAIN) {
      struct pollfd p = {.fd = 0, .events = POLLIN};
      poll(&p, 1, -1);
    } else if (errno != EINTR) {
      return -1;
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

// JSON.parse(stdin).cniVersion when it is a non-empty string, else `fallback`.
static void config_version(const struct buf *in, char *out, size_t size, const char *fallback) {
  const char *end = in ? in->data + in->len : NULL;
  const char *v = in ? json_member(json_document(in->data, in->len), end, "cniVersion") : NULL;
  if (!v || *v != '"' || json_decode_string(v, end, out, size) || !out[0]) snprintf(out, size, "%s", fallback);
}

// A CNI error on stdout in the config's cniVersion; exit code 1.
static int cni_error(const struct buf *in, int code, const char *text) {
  char version[256];
  config_version(in, version, sizeof version, "1.1.0");
  struct buf msg = {0};
  char number[16];
  snprintf(number, sizeof number, "%d", code);
  if (append_str(&msg, "{\"cniVersion\":") || append_json_string(&msg, version, strlen(version)) || append_str(&msg, ",\"code\":") ||
      append_str(&msg, number) || append_str(&msg, ",\"msg\":") || append_json_string(&msg, text, strlen(text)) || append_str(&msg, "}\n"))
    return 1;
  write_all(1, msg.data, msg.len);
  return 1;
}

// VERSION (the supported versions generated from @ipamkit/cni) and the "about" text, as skel does.
static int answer_version(const char *command, struct buf *in) {
  if (!command || !*command) {
    const char *about = "ipamkit CNI IPAM plugin\nCNI protocol versions supported: " IPAMKIT_VERSIONS_TEXT "\n";
    write_all(2, about, strlen(about));
    return 0;
  }
  // VERSION ignores an unreadable stdin, like the reference skel
  if (read_stdin(in)) in->len = 0;
  char version[4096];
  config_version(in, version, sizeof version, IPAMKIT_DEFAULT_VERSION);
  struct buf out = {0};
  if (append_str(&out, "{\"cniVersion\":") || append_json_string(&out, version, strlen(version)) ||
      append_str(&out, ",\"supportedVersions\":[" IPAMKIT_VERSIONS_JSON "]}\n"))
    return cni_error(in, 5, "out of memory");
  return write_all(1, out.data, out.len) ? 1 : 0;
}

// the agent exchange (uses the buffer helpers above)
#include "forwarder-agent.h"

// The first executable `node` in PATH, as `env` would find it; 0 when there is none.
static int find_node(char *out, size_t size) {
  const char *path = getenv("PATH");
  if (!path || !*path) path = DEFAULT_PATH;
  for (const char *at = path; *at;) {
    const char *colon = strchr(at, ':');
    size_t n = colon ? (size_t)(colon - at) : strlen(at);
    struct stat st;
    snprintf(out, size, "%.*s/node", (int)(n ? n : 1), n ? at : ".");
    if (access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode)) return 1;
    at += n + (colon ? 1 : 0);
  }
  return 0;
}

static const char *node_missing(void) {
  static char text[PATH_MAX + 64];
  const char *path = getenv("PATH");
  snprintf(text, sizeof text, "\"node\" is not in PATH (%s)", path && *path ? path : DEFAULT_PATH);
  return text;
}

// Direct mode: `node ipamkit-node` (beside the real file of this program) on the same stdin. Never
// returns but with a CNI error when that is impossible; `note` goes to stderr first.
static int run_direct(const struct buf *in, const char *note) {
  char path[PATH_MAX], node[PATH_MAX], text[3 * PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
  if (n <= 0) return cni_error(in, 2, "the plugin (ipamkit-node) cannot be run beside this binary: its own path is unknown");
  path[n] = '\0';
  char *slash = strrchr(path, '/');
  strcpy(slash ? slash + 1 : path, "ipamkit-node");
  if (access(path, R_OK) != 0) {
    snprintf(text, sizeof text, "the plugin (%s) cannot be run beside this binary: %s", path, strerror(errno));
    return cni_error(in, 2, text);
  }
  if (!find_node(node, sizeof node)) {
    snprintf(text, sizeof text,
             "this call needs direct mode (no agent_socket, or the agent refused it), and direct mode needs Node.js on the host: %s; "
             "configure agent_socket and run the ipamkit agent (DaemonSet), or install Node.js 20",
             node_missing());
    return cni_error(in, 50, text);
  }
  int fd = memfd_create("ipamkit-stdin", 0);
  size_t done = 0;
  while (fd >= 0 && done < in->len) {
    ssize_t w = write(fd, in->data + done, in->len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  if (fd < 0 || done < in->len || lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) < 0)
    return cni_error(in, 2, "the plugin (ipamkit-node) cannot be run: stdin cannot be handed over");
  if (fd > 0) close(fd);
  if (note) write_all(2, note, strlen(note));
  setenv("IPAMKIT_ROUTE", "direct", 1);
  char *argv[] = {node, path, NULL};
  execv(node, argv);
  snprintf(text, sizeof text, "the plugin (%s) cannot be run beside this binary: %s: %s", path, node, strerror(errno));
  return cni_error(in, 2, text);
}

// The agent gave no answer: code 11, or direct mode when that is allowed and possible.
static int agent_failed(const struct route *route, enum outcome outcome, const char *why, const struct buf *in) {
  char text[PATH_MAX + 1024], node[PATH_MAX];
  int prefix = snprintf(text, sizeof text, "ipamkit agent at %s: %s", route->socket, why);
  char *rest = text + prefix;
  size_t room = sizeof text - (size_t)prefix;
  if (outcome == TIMED_OUT) {
    snprintf(rest, room, " after %g s (agent_timeout): the agent is hung or overloaded; it will not perform this call later", route->timeout_seconds);
  } else if (outcome == UNREACHABLE && (route->required || !find_node(node, sizeof node))) {
    snprintf(rest, room, ": the ipamkit agent (DaemonSet) is not running on this node%s%s", route->required ? " (agent_required)" : "",
             route->required ? "" : "; direct mode needs Node.js on the host and \"node\" is not in PATH");
  } else if (outcome == FAILED && (route->required || !find_node(node, sizeof node))) {
    snprintf(rest, room, "%s", route->required ? " (agent_required)" : "; direct mode needs Node.js on the host and \"node\" is not in PATH");
  } else if (outcome != REFUSED) {
    char note[sizeof text + 64];
    snprintf(note, sizeof note, "ipamkit: %s; running the call directly\n", text);
    return run_direct(in, note);
  }
  return cni_error(in, 11, text);
}

int main(void) {
  const char *command = getenv("CNI_COMMAND");
  static char in_space[STATIC_BYTES], request_space[STATIC_BYTES], answer_space[STATIC_BYTES];
  struct buf in = STATIC_BUF(in_space);
  if (!command || !*command || strcmp(command, "VERSION") == 0) return answer_version(command, &in);
  if (read_stdin(&in)) {
    char text[160];
    snprintf(text, sizeof text, "stdin cannot be read: %s", strerror(errno));
    return cni_error(&in, 5, text);
  }
  static struct route route;
  decide_route(in.data, in.len, &route);
  if (!route.agent) return run_direct(&in, NULL);
  double until = now_ms(CLOCK_MONOTONIC) + route.timeout_seconds * 1000.0;
  struct buf req = STATIC_BUF(request_space), answer = STATIC_BUF(answer_space);
  if (build_request(&req, route.socket, now_ms(CLOCK_REALTIME) + route.timeout_seconds * 1000.0, &in) || req.len > MAX_REQUEST_BYTES)
    return agent_failed(&route, FAILED, "the request is too large", &in);
  char why[256];
  enum outcome outcome = ask_agent(&route, &req, &answer, until, why, sizeof why);
  if (outcome != ANSWERED) return agent_failed(&route, outcome, why, &in);
  int code = relay(&answer);
  if (code >= 0) return code;
  // "fallback": the agent reads the config differently (its own flat file): direct mode decides
  if (answer.len == 9 && memcmp(answer.data, "fallback\n", 9) == 0) return run_direct(&in, NULL);
  return agent_failed(&route, FAILED, "answer is not a response of this protocol", &in);
}
