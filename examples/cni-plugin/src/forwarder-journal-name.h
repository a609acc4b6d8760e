// The name of a DEL journal record (src/forwarder-journal.h), as journalRecordName() of
// @ipamkit/cni gives it: `del:<network>:<container id>:<ifname>`, from the config's `name` and the
// last CNI_CONTAINERID and CNI_IFNAME of the environment (what the agent reads from the record),
// each byte outside [A-Za-z0-9_.-] written %XX. Pure but for the environment: the differential
// test's reader (test/route-reader.c) checks it against the TypeScript on generated cases.
#ifndef IPAMKIT_FORWARDER_JOURNAL_NAME_H
#define IPAMKIT_FORWARDER_JOURNAL_NAME_H
#include <stdio.h>
#include <string.h>
#include "forwarder-generated.h"
#include "forwarder-json.h"

#if !defined(IPAMKIT_JOURNAL_NAME_MAX_BYTES) || !defined(IPAMKIT_JOURNAL_RECORD_PREFIX)
#error "build.mjs generates the IPAMKIT_* macros from packages/cni; build with `node build.mjs`"
#endif

extern char **environ;

// The value of the last NAME=… entry of the environment, or NULL: what the agent reads from the
// record's env (JSON.parse keeps the last of two equal keys).
static const char *last_env(const char *name) {
  size_t n = strlen(name);
  const char *found = NULL;
  for (char **e = environ; *e; e++)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') found = *e + n + 1;
  return found;
}

// Non-empty, and every byte printable ASCII but space.
static int printable(const char *s) {
  if (!s || !*s) return 0;
  for (; *s; s++)
    if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e) return 0;
  return 1;
}

// Appends `s` to out (n bytes used, at most `max`): bytes outside [A-Za-z0-9_.-] as %XX. -1 when it does not fit.
static int put_encoded(char *out, size_t *n, size_t max, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    int safe = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (*n + (safe ? 1 : 3) > max) return -1;
    if (safe) out[(*n)++] = (char)c;
    else *n += (size_t)snprintf(out + *n, 4, "%%%02X", c);
  }
  return 0;
}

// journalRecordName() of the call (the config at `conf`, the environment): `del:<network>:<container
// id>:<ifname>` in out (IPAMKIT_JOURNAL_NAME_MAX_BYTES + 1 bytes), or -1 when the call names none.
static int journal_record_name(const char *conf, const char *end, char *out) {
  char network[IPAMKIT_JOURNAL_NAME_MAX_BYTES + 1];
  const char *at = json_member(conf, end, "name");
  if (!at || *at != '"' || json_decode_string(at, end, network, sizeof network) || !network[0]) return -1;
  const char *id = last_env("CNI_CONTAINERID"), *ifname = last_env("CNI_IFNAME");
  if (!printable(id) || !printable(ifname)) return -1;
  const char *parts[] = {network, id, ifname};
  size_t n = strlen(IPAMKIT_JOURNAL_RECORD_PREFIX), max = IPAMKIT_JOURNAL_NAME_MAX_BYTES;
  memcpy(out, IPAMKIT_JOURNAL_RECORD_PREFIX, n);
  for (int i = 0; i < 3; i++) {
    if (i > 0 && n + 1 > max) return -1;
    if (i > 0) out[n++] = ':';
    if (put_encoded(out, &n, max, parts[i])) return -1;
  }
  out[n] = '\0';
  return 0;
}

#endif
