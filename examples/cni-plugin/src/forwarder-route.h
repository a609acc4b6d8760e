// The routing question of src/forwarder.c, answered once: does this call go to the node-local
// agent, and with which bound and which allowed uid? The same rules as agentSettings() in
// packages/cni/src/agent-settings.ts (checked against it by forwarder-differential.test.ts):
// - the agent's socket, `agent_required` and `agent_uid` are node-level: read from this node's flat
//   file only, never from the network config (a NetworkAttachmentDefinition is written by whoever
//   may create one in a namespace; this program runs as root);
// - the node's flat file is `$IPAMKIT_CONFIGURATION_PATH` (the runtime's environment, the node
//   admin's) when set, else the first of the default locations that exists; `ipam.configuration_path`
//   in a network config is not read here;
// - `agent_timeout` from the inline `ipam` block, else from the flat file (it bounds only that call).
// The flat file is opened without following a FIFO's or a terminal's semantics (O_NONBLOCK|O_NOCTTY)
// and used only when it is a regular file owned by root (or by this process's user) that neither
// group nor others may write. Locations, names and bounds are generated from the TypeScript files by
// build.mjs (IPAMKIT_* macros), never copied by hand.
#ifndef IPAMKIT_FORWARDER_ROUTE_H
#define IPAMKIT_FORWARDER_ROUTE_H
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "forwarder-generated.h"
#include "forwarder-json.h"

#if !defined(IPAMKIT_FLAT_FILE_PATHS) || !defined(IPAMKIT_FLAT_FILE_NAME) || !defined(IPAMKIT_AGENT_TIMEOUT_DEFAULT) || \
    !defined(IPAMKIT_AGENT_TIMEOUT_MAX) || !defined(IPAMKIT_CONFIGURATION_PATH_ENV) || !defined(IPAMKIT_FLAT_FILE_MAX_BYTES) || \
    !defined(IPAMKIT_AGENT_SOCKET_MAX_BYTES)
#error "build.mjs generates the IPAMKIT_* macros from packages/cni; build with `node build.mjs`"
#endif

struct route {
  int agent;  // 0: direct mode
  char socket[IPAMKIT_AGENT_SOCKET_MAX_BYTES + 1];
  int required;
  double timeout_seconds;
  long uid;  // -1: only root
};

// A JSON text and where its value starts.
struct doc {
  const char *value, *end;
};

// configurationPathFile(): the path itself when it names a .conf/.json file, else <dir>/whereabouts.conf.
// -1 (nothing written) when the result would not fit in `size` bytes: never a truncated path.
static int flat_file_of(const char *configuration_path, char *out, size_t size) {
  size_t n = strlen(configuration_path);
  if ((n >= 5 && strcmp(configuration_path + n - 5, ".conf") == 0) || (n >= 5 && strcmp(configuration_path + n - 5, ".json") == 0)) {
    if (n + 1 > size) return -1;
    memcpy(out, configuration_path, n + 1);
    return 0;
  }
  while (n > 0 && configuration_path[n - 1] == '/') n--;
  size_t name = strlen(IPAMKIT_FLAT_FILE_NAME);
  if (n + 1 + name + 1 > size) return -1;
  memcpy(out, configuration_path, n);
  out[n] = '/';
  memcpy(out + n + 1, IPAMKIT_FLAT_FILE_NAME, name + 1);
  return 0;
}

// The node's flat file (findFlatFile() with the node's configuration path): the override alone when
// set, else the first default that exists. 0 and `out` filled, or -1: none.
static int find_node_flat_file(char *out, size_t size) {
  static const char *const defaults[] = {IPAMKIT_FLAT_FILE_PATHS};
  const char *node = getenv(IPAMKIT_CONFIGURATION_PATH_ENV);
  if (node && *node) return flat_file_of(node, out, size) == 0 && access(out, F_OK) == 0 ? 0 : -1;
  for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
    if (access(defaults[i], F_OK) != 0) continue;
    if (strlen(defaults[i]) + 1 > size) return -1;
    memcpy(out, defaults[i], strlen(defaults[i]) + 1);
    return 0;
  }
  return -1;
}

// Reads the file at `path` into storage when it may hold node-level settings: a regular file (a FIFO
// or device is opened without blocking and refused), owned by root or by this process's user, not
// writable by group or others, at most `size - 1` bytes. Its length, or -1.
static long read_trusted_file(const char *path, char *storage, size_t size) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
      st.st_size < 0 || (unsigned long long)st.st_size >= (unsigned long long)size) {
    close(fd);
    return -1;
  }
  size_t len = 0;
  for (;;) {
    ssize_t r = read(fd, storage + len, size - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
    if (len == size) break;
  }
  close(fd);
  return len < size ? (long)len : -1;
}

// The node's flat file's object, or none (a missing, unsafe or unreadable file is the direct path's to report).
static struct doc read_flat_file(char *storage, size_t size) {
  struct doc none = {0};
  char path[PATH_MAX];
  if (find_node_flat_file(path, sizeof path) != 0) return none;
  long len = read_trusted_file(path, storage, size);
  const char *value = len >= 0 ? json_document(storage, (size_t)len) : NULL;
  if (!value || *value != '{') return none;
  return (struct doc){value, storage + len};
}

// pick(): the inline value unless absent or "", else the flat file's.
static struct doc pick(const struct doc *ipam, const struct doc *flat, const char *key) {
  const char *v = json_member(ipam->value, ipam->end, key);
  if (v && !json_is_string(v, ipam->end, "")) return (struct doc){v, ipam->end};
  return (struct doc){flat->value ? json_member(flat->value, flat->end, key) : NULL, flat->end};
}

// The flat file's value of a node-level key.
static struct doc node_value(const struct doc *flat, const char *key) {
  return (struct doc){flat->value ? json_member(flat->value, flat->end, key) : NULL, flat->end};
}

static int is_number(const struct doc *d) { return d->value && (*d->value == '-' || (*d->value >= '0' && *d->value <= '9')); }

// The route of a call whose config (stdin) is the JSON value at `conf` (NULL: not JSON), ending at
// `end`, on a node whose flat file is `flat` (value NULL: none).
static void decide_route(const char *conf, const char *end, const struct doc *flat, struct route *r) {
  r->agent = 0;
  r->required = 0;
  r->timeout_seconds = IPAMKIT_AGENT_TIMEOUT_DEFAULT;
  r->uid = -1;
  const char *ipam_at = json_member(conf, end, "ipam");
  if (!ipam_at || *ipam_at != '{') return;
  struct doc ipam = {ipam_at, end};
  struct doc socket = node_value(flat, "agent_socket");
  if (!socket.value || *socket.value != '"' || json_decode_string(socket.value, socket.end, r->socket, sizeof r->socket) || r->socket[0] != '/')
    return;
  r->agent = 1;
  struct doc required = node_value(flat, "agent_required");
  r->required = required.value && strncmp(required.value, "true", 4) == 0;
  struct doc timeout = pick(&ipam, flat, "agent_timeout");
  double seconds = is_number(&timeout) ? strtod(timeout.value, NULL) : 0;
  if (seconds > 0 && seconds <= IPAMKIT_AGENT_TIMEOUT_MAX) r->timeout_seconds = seconds;
  struct doc uid = node_value(flat, "agent_uid");
  if (is_number(&uid)) {
    double value = strtod(uid.value, NULL);
    // Number.isSafeInteger(value) && value >= 0, whatever its spelling (1e3 is 1000, -0 is 0): the
    // range is checked before the cast (1e300 does not fit a long long)
    if (value >= 0 && value <= 9007199254740991.0 && value == (double)(long long)value) r->uid = (long)value;
  }
}

#endif
