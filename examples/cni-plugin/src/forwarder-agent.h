// The exchange with the node-local agent, for src/forwarder.c (included after its buffer helpers):
// one request per connection, bounded by the call's deadline (connect included), and only with a
// peer that is root or `agent_uid` (SO_PEERCRED). Protocol: packages/agent/src/protocol.ts.
// Once the peer is accepted the agent may have received the request: whatever goes wrong after that
// is code 11 (MAY_HAVE_RECEIVED), never a second run of the call in direct mode.
#ifndef IPAMKIT_FORWARDER_AGENT_H
#define IPAMKIT_FORWARDER_AGENT_H
#include "forwarder-answer.h"

// The pause between two connects to a listener whose backlog is full: 1 ms, doubling, at most this.
#define CONNECT_PAUSE_MAX_MS 50.0

// {"v":1,"frame":"raw","socket":…,"deadline":<epoch ms>,"env":{CNI_*…},"stdin":…}
static int build_request(struct buf *req, const char *socket_path, double deadline, const struct buf *in) {
  char number[32];
  snprintf(number, sizeof number, "%.0f", deadline);
  if (append_str(req, "{\"v\":1,\"frame\":\"raw\",\"socket\":") || append_json_string(req, socket_path, strlen(socket_path)) ||
      append_str(req, ",\"deadline\":") || append_str(req, number) || append_str(req, ",\"env\":{"))
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

// UNREACHABLE: no connection; FAILED: nothing sent (the request could not be built); TIMED_OUT: the
// deadline passed; REFUSED: the peer is not trusted (nothing sent); MAY_HAVE_RECEIVED: connected, then
// no usable answer.
enum outcome { ANSWERED, UNREACHABLE, FAILED, TIMED_OUT, REFUSED, MAY_HAVE_RECEIVED };

// errno as Node names it (ENOENT, ECONNREFUSED, …), as @ipamkit/agent's client reports it.
static const char *errno_name(int e) {
  switch (e) {
    case ENOENT: return "ENOENT";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EACCES: return "EACCES";
    case ENOTSOCK: return "ENOTSOCK";
    case ECONNRESET: return "ECONNRESET";
    case EPIPE: return "EPIPE";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    default: return strerror(e);
  }
}

// Waits for fd until the monotonic deadline; 0 ready, -1 when the deadline passed.
static int wait_fd(int fd, short events, double until) {
  for (;;) {
    double left = until - now_ms(CLOCK_MONOTONIC);
    if (left <= 0) return -1;
    struct pollfd p = {.fd = fd, .events = events};
    int r = poll(&p, 1, (int)left + 1);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return -1;
  }
}

// Sends the request and reads the whole answer before `until` (monotonic ms). `why` says what failed.
static enum outcome ask_agent(const struct route *route, const struct buf *req, struct buf *answer, double until, char *why, size_t size) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(route->socket) >= sizeof addr.sun_path) return snprintf(why, size, "ENAMETOOLONG"), UNREACHABLE;
  strcpy(addr.sun_path, route->socket);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return snprintf(why, size, "%s", errno_name(errno)), UNREACHABLE;
  enum outcome result = MAY_HAVE_RECEIVED;
  // a listener whose backlog is full (a stopped or busy agent) makes a non-blocking connect say
  // EAGAIN, and poll() on a socket that is not connected returns at once: a pause between attempts,
  // growing, bounded by the deadline (never a spin)
  double pause = 1;
  while (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    if (errno == EISCONN) break;
    if (errno == EINTR) continue;
    double left = until - now_ms(CLOCK_MONOTONIC);
    if (errno == EAGAIN && left > 0) {
      double ms = pause < left ? pause : left;
      struct timespec t = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
      while (nanosleep(&t, &t) != 0 && errno == EINTR) {
      }
      pause = pause * 2 < CONNECT_PAUSE_MAX_MS ? pause * 2 : CONNECT_PAUSE_MAX_MS;
      continue;
    }
    result = errno == EAGAIN ? TIMED_OUT : UNREACHABLE;
    snprintf(why, size, "%s", errno == EAGAIN ? IPAMKIT_T_TIMED_OUT : errno_name(errno));
    close(fd);
    return result;
  }
  struct ucred peer;
  socklen_t peer_len = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0 || (peer.uid != 0 && (long)peer.uid != route->uid)) {
    char uid[32];
    snprintf(uid, sizeof uid, "%ld", route->uid);
    snprintf(why, size, IPAMKIT_T_PEER_REFUSED, peer_len == sizeof peer ? (long)peer.uid : -1L, route->uid < 0 ? "unset" : uid);
    close(fd);
    return REFUSED;
  }
  size_t sent = 0;
  while (sent < req->len) {
    ssize_t w = send(fd, req->data + sent, req->len - sent, MSG_NOSIGNAL);
    if (w > 0) sent += (size_t)w;
    else if (w < 0 && errno == EINTR) continue;
    else if (w < 0 && errno == EAGAIN && wait_fd(fd, POLLOUT, until) == 0) continue;
    else goto out;
  }
  shutdown(fd, SHUT_WR);
  for (;;) {
    if (answer->len > MAX_ANSWER_BYTES || reserve(answer, READ_CHUNK)) goto out;
    ssize_t r = recv(fd, answer->data + answer->len, answer->cap - answer->len, 0);
    if (r > 0) answer->len += (size_t)r;
    else if (r == 0) break;
    else if (errno == EINTR) continue;
    else if (errno == EAGAIN && wait_fd(fd, POLLIN, until) == 0) continue;
    else goto out;
  }
  result = ANSWERED;
out:
  if (result != ANSWERED) {
    int timed_out = now_ms(CLOCK_MONOTONIC) >= until;
    result = timed_out ? TIMED_OUT : MAY_HAVE_RECEIVED;
    snprintf(why, size, "%s", timed_out ? IPAMKIT_T_TIMED_OUT : answer->len ? IPAMKIT_T_NOT_JSON : IPAMKIT_T_NO_ANSWER);
  }
  close(fd);
  return result;
}

// Writes the agent's answer (parse_answer) to stdout and stderr; its exit code, or -1 when it is
// not an answer of this protocol (nothing written then).
static int relay(const struct buf *answer) {
  struct answer a;
  if (parse_answer(answer->data, answer->len, &a) != 0) return -1;
  if (write_all(1, a.out, a.out_len)) return 1;
  if (a.err_len > 0) write_all(2, a.err, a.err_len);
  return a.code;
}

#endif
