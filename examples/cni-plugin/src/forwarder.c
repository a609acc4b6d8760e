// dist/ipamkit: the CNI binary a runtime executes, as a small static program.
//
// A Node process costs ~100 ms of CPU to start on a 2-core machine — more than the IPAM work of a
// call answered by the node-local agent. This program is only the agent path's fast lane and
// decides nothing: when the network config names an `agent_socket` and the agent there answers,
// it relays the answer (stdout, stderr, exit code) byte for byte. In every other case — VERSION,
// no agent_socket, the agent unreachable, a failed or refused answer — it executes the Node
// forwarder `ipamkit-node` beside it with the same environment and the same stdin, which applies
// every rule (flat file, agent_required, direct mode). Protocol: packages/agent/src/protocol.ts
// ("raw" frame).
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

// The agent refuses larger requests (MAX_REQUEST_BYTES); such a call goes to the Node forwarder.
#define MAX_REQUEST_BYTES (4 * 1024 * 1024)
// As long as the Node forwarder waits for the agent.
#define AGENT_TIMEOUT_SECONDS 60
#define MAX_ANSWER_BYTES (64 * 1024 * 1024)

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

// A JSON string: quotes, backslashes and control characters escaped; other bytes as they are (the
// agent decodes UTF-8 as the Node forwarder does, invalid sequences included).
static int append_json_string(struct buf *b, const char *s, size_t n) {
  if (append(b, "\"", 1)) return -1;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
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

// The first `"key": "value"` in the text whose value is a plain string (no escapes), copied to out.
// Only a routing hint: the agent checks it against the config as the Node forwarder reads it.
static int find_string_value(const struct buf *b, const char *key, char *out, size_t size) {
  char quoted[64];
  int qn = snprintf(quoted, sizeof quoted, "\"%s\"", key);
  const char *end = b->data + b->len;
  const char *at = b->data;
  while (at && at < end) {
    const char *hit = memmem(at, (size_t)(end - at), quoted, (size_t)qn);
    if (!hit) return -1;
    const char *p = hit + qn;
    at = p;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    if (p >= end || *p != ':') continue;
    p++;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    if (p >= end || *p != '"') continue;
    p++;
    size_t n = 0;
    while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20 && n + 1 < size) out[n++] = *p++;
    if (p >= end || *p != '"') return -1;
    out[n] = '\0';
    return 0;
  }
  return -1;
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

// A CNI error on stdout in the config's cniVersion; exit code 1.
static int cni_error(const struct buf *in, int code, const char *text) {
  char version[64] = "1.1.0";
  if (in) find_string_value(in, "cniVersion", version, sizeof version);
  struct buf msg = {0};
  char number[16];
  snprintf(number, sizeof number, "%d", code);
  if (append_str(&msg, "{\"cniVersion\":") || append_json_string(&msg, version, strlen(version)) || append_str(&msg, ",\"code\":") ||
      append_str(&msg, number) || append_str(&msg, ",\"msg\":") || append_json_string(&msg, text, strlen(text)) || append_str(&msg, "}\n"))
    return 1;
  write_all(1, msg.data, msg.len);
  return 1;
}

// Runs ipamkit-node (beside the real file of this program) on the same stdin. Never returns but
// with a CNI error when even that is impossible.
static int run_node(char **argv, const struct buf *in) {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
  const char *problem = "its own path is unknown";
  if (n > 0) {
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    strcpy(slash ? slash + 1 : path, "ipamkit-node");
    problem = NULL;
    if (in) {
      int fd = memfd_create("ipamkit-stdin", 0);
      size_t done = 0;
      while (fd >= 0 && done < in->len) {
        ssize_t w = write(fd, in->data + done, in->len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += (size_t)w;
      }
      if (fd < 0 || done < in->len || lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) < 0) problem = "stdin cannot be handed over";
      if (fd > 0) close(fd);
    }
    if (!problem) {
      argv[0] = path;
      execv(path, argv);
      problem = strerror(errno);
    }
  }
  char text[PATH_MAX + 128];
  snprintf(text, sizeof text, "the plugin (%s) cannot be run beside this binary: %s", n > 0 ? path : "ipamkit-node", problem);
  return cni_error(in, 2, text);
}

// {"v":1,"frame":"raw","socket":…,"env":{CNI_*…},"stdin":…}
static int build_request(struct buf *req, const char *socket_path, const struct buf *in) {
  if (append_str(req, "{\"v\":1,\"frame\":\"raw\",\"socket\":") || append_json_string(req, socket_path, strlen(socket_path)) ||
      append_str(req, ",\"env\":{"))
    return -1;
  int first = 1;
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (strncmp(*e, "CNI_", 4) != 0 || !eq) continue;
    if ((!first && append(req, ",", 1)) || append_json_string(req, *e, (size_t)(eq - *e)) || append(req, ":", 1) ||
        append_json_string(req, eq + 1, strlen(eq + 1)))
      return -1;
    first = 0;
  }
  return append_str(req, "},\"stdin\":") || append_json_string(req, in->data, in->len) || append_str(req, "}\n");
}

// Sends the request and reads the whole answer; 0 when the connection delivered one.
static int ask_agent(const char *socket_path, const struct buf *req, struct buf *answer) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(socket_path) >= sizeof addr.sun_path) return -1;
  strcpy(addr.sun_path, socket_path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct timeval timeout = {.tv_sec = AGENT_TIMEOUT_SECONDS};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  int ok = connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
  for (size_t sent = 0; ok && sent < req->len;) {
    ssize_t w = send(fd, req->data + sent, req->len - sent, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ok = 0;
    else sent += (size_t)w;
  }
  if (ok) shutdown(fd, SHUT_WR);
  while (ok) {
    if (answer->len > MAX_ANSWER_BYTES || reserve(answer, READ_CHUNK)) ok = 0;
    else {
      ssize_t r = recv(fd, answer->data + answer->len, answer->cap - answer->len, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) ok = 0;
      else if (r == 0) break;
      else answer->len += (size_t)r;
    }
  }
  close(fd);
  return ok ? 0 : -1;
}

// "raw <exit code> <stdout bytes> <stderr bytes>\n" then both texts; anything else (the agent's
// "fallback\n" included) is no answer.
static int relay(const struct buf *answer) {
  char *nl = memchr(answer->data, '\n', answer->len);
  if (!nl || answer->len < 4 || memcmp(answer->data, "raw ", 4) != 0) return -1;
  char header[96];
  size_t hn = (size_t)(nl - answer->data);
  if (hn >= sizeof header) return -1;
  memcpy(header, answer->data, hn);
  header[hn] = '\0';
  int code;
  size_t out_len, err_len;
  char extra;
  if (sscanf(header, "raw %d %zu %zu%c", &code, &out_len, &err_len, &extra) != 3 || code < 0 || code > 255) return -1;
  const char *body = nl + 1;
  size_t body_len = answer->len - hn - 1;
  if (out_len > body_len || err_len != body_len - out_len) return -1;
  if (write_all(1, body, out_len)) return 1;
  if (err_len > 0) write_all(2, body + out_len, err_len);
  return code;
}

int main(int argc, char **argv) {
  (void)argc;
  const char *command = getenv("CNI_COMMAND");
  if (!command || !*command || strcmp(command, "VERSION") == 0) return run_node(argv, NULL);
  static char in_space[STATIC_BYTES], request_space[STATIC_BYTES], answer_space[STATIC_BYTES];
  struct buf in = STATIC_BUF(in_space);
  if (read_stdin(&in)) {
    char text[160];
    snprintf(text, sizeof text, "stdin cannot be read: %s", strerror(errno));
    return cni_error(&in, 5, text);
  }
  char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
  if (find_string_value(&in, "agent_socket", socket_path, sizeof socket_path) || socket_path[0] != '/') return run_node(argv, &in);
  struct buf req = STATIC_BUF(request_space), answer = STATIC_BUF(answer_space);
  if (build_request(&req, socket_path, &in) || req.len > MAX_REQUEST_BYTES) return run_node(argv, &in);
  if (ask_agent(socket_path, &req, &answer)) return run_node(argv, &in);
  int code = relay(&answer);
  return code < 0 ? run_node(argv, &in) : code;
}
