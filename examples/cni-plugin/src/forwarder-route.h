// The routing question of src/forwarder.c, answered once: does this call go to the node-local
// agent, and with which bound and which allowed uid? The same rules as agentSettings() in
// packages/cni/src/agent-settings.ts (the agent checks that the socket matches and refuses a call
// it would not have been sent): `agent_*` keys from the inline `ipam` block, else from the flat
// file, found as config-paths.ts finds it. The flat-file locations and the timeout bounds are
// generated from those TypeScript files by build.mjs (IPAMKIT_* macros), never copied by hand.
#ifndef IPAMKIT_FORWARDER_ROUTE_H
#define IPAMKIT_FORWARDER_ROUTE_H
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "forwarder-json.h"

#if !defined(IPAMKIT_FLAT_FILE_PATHS) || !defined(IPAMKIT_FLAT_FILE_NAME) || !defined(IPAMKIT_AGENT_TIMEOUT_DEFAULT) || \
    !defined(IPAMKIT_AGENT_TIMEOUT_MAX)
#error "build.mjs generates the IPAMKIT_* macros from packages/cni; build with `node build.mjs`"
#endif

#define MAX_FLAT_FILE_BYTES (1024 * 1024)

struct route {
  int agent;  // 0: direct mode
  char socket[PATH_MAX];
  int required;
  double timeout_seconds;
  long uid;  // -1: only root
};

// A JSON text and where its value starts.
struct doc {
  const char *value, *end;
};

// configurationPathFile(): the path itself when it names a .conf/.json file, else <dir>/whereabouts.conf.
static void flat_file_of(const char *configuration_path, char *out, size_t size) {
  size_t n = strlen(configuration_path);
  if ((n >= 5 && strcmp(configuration_path + n - 5, ".conf") == 0) || (n >= 5 && strcmp(configuration_path + n - 5, ".json") == 0)) {
    snprintf(out, size, "%s", configuration_path);
    return;
  }
  while (n > 0 && configuration_path[n - 1] == '/') n--;
  snprintf(out, size, "%.*s/%s", (int)n, configuration_path, IPAMKIT_FLAT_FILE_NAME);
}

// The flat file's object, or none (a missing or unreadable file is the direct path's to report).
static struct doc read_flat_file(const struct doc *ipam, char *storage, size_t size) {
  static const char *const defaults[] = {IPAMKIT_FLAT_FILE_PATHS};
  char first[PATH_MAX] = "";
  const char *cp = json_member(ipam->value, ipam->end, "configuration_path");
  char cp_text[PATH_MAX];
  if (cp && *cp == '"' && json_decode_string(cp, ipam->end, cp_text, sizeof cp_text) == 0 && cp_text[0]) flat_file_of(cp_text, first, sizeof first);
  const char *found = NULL;
  if (first[0] && access(first, F_OK) == 0) found = first;
  for (size_t i = 0; !found && i < sizeof defaults / sizeof defaults[0]; i++)
    if (access(defaults[i], F_OK) == 0) found = defaults[i];
  struct doc none = {0};
  if (!found) return none;
  int fd = open(found, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return none;
  size_t len = 0;
  for (;;) {
    ssize_t r = read(fd, storage + len, size - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
    if (len == size) break;
  }
  close(fd);
  const char *value = len < size ? json_document(storage, len) : NULL;
  if (!value || *value != '{') return none;
  return (struct doc){value, storage + len};
}

// pick(): the inline value unless absent or "", else the flat file's.
static struct doc pick(const struct doc *ipam, const struct doc *flat, const char *key) {
  const char *v = json_member(ipam->value, ipam->end, key);
  if (v && !json_is_string(v, ipam->end, "")) return (struct doc){v, ipam->end};
  return (struct doc){flat->value ? json_member(flat->value, flat->end, key) : NULL, flat->end};
}

static int is_number(const struct doc *d) { return d->value && (*d->value == '-' || (*d->value >= '0' && *d->value <= '9')); }

// The route of a call whose config (stdin) is the JSON value at `conf` (NULL: not JSON), ending at `end`.
static void decide_route(const char *conf, const char *end, struct route *r) {
  r->agent = 0;
  r->required = 0;
  r->timeout_seconds = IPAMKIT_AGENT_TIMEOUT_DEFAULT;
  r->uid = -1;
  const char *ipam_at = json_member(conf, end, "ipam");
  if (!ipam_at || *ipam_at != '{') return;
  struct doc ipam = {ipam_at, end};
  static char flat_space[MAX_FLAT_FILE_BYTES];
  struct doc flat = read_flat_file(&ipam, flat_space, sizeof flat_space);
  struct doc socket = pick(&ipam, &flat, "agent_socket");
  if (!socket.value || *socket.value != '"' || json_decode_string(socket.value, socket.end, r->socket, sizeof r->socket) || r->socket[0] != '/')
    return;
  r->agent = 1;
  struct doc required = pick(&ipam, &flat, "agent_required");
  r->required = required.value && strncmp(required.value, "true", 4) == 0;
  struct doc timeout = pick(&ipam, &flat, "agent_timeout");
  double seconds = is_number(&timeout) ? strtod(timeout.value, NULL) : 0;
  if (seconds > 0 && seconds <= IPAMKIT_AGENT_TIMEOUT_MAX) r->timeout_seconds = seconds;
  struct doc uid = pick(&ipam, &flat, "agent_uid");
  if (is_number(&uid) && *uid.value != '-') {
    char *after;
    double value = strtod(uid.value, &after);
    // an integer (Number.isSafeInteger), whatever its spelling (1e3 is 1000)
    if (value == (double)(long long)value && value <= 9007199254740991.0) r->uid = (long)value;
  }
}

#endif
