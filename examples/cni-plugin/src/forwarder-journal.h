// The DEL journal, for src/forwarder.c (included after its buffer helpers and forwarder-agent.h).
// When no agent answers a DEL (no socket, or nothing listens on it) and direct mode is impossible
// (`agent_required`, or no Node on the host), the call is written to the node's journal directory
// (`agent_journal_dir` of the node's flat file; without it there is no journal) and answered with success: the
// CNI spec's rule that DEL should succeed when it can, so kubelet does not retry it forever and the
// pod is not stranded. The agent replays the journal by exact key when it starts
// (packages/agent/src/journal.ts); what no agent replays, the reconciler frees as any orphan.
// - One record per attachment: `del:<network>:<container id>:<ifname>` (journalRecordName() of
//   @ipamkit/cni, the same bytes: forwarder-differential.test.ts), so a retried DEL replaces its
//   own record. Its text is the call: {"v":1,"journaled":<epoch ms>,"env":{CNI_*…},"stdin":…}.
// - Atomic: written to a temporary file (O_CREAT|O_EXCL|O_NOFOLLOW, 0600), fsynced, renamed over
//   the record, the directory fsynced. Root-only: the directory must be root's (or this user's)
//   and writable by nobody else; it is opened with O_NOFOLLOW|O_DIRECTORY and everything inside is
//   reached relative to it.
// - Bounded: at most IPAMKIT_JOURNAL_MAX_RECORDS entries (counted under flock on the directory,
//   so concurrent DELs cannot overshoot), each record at most IPAMKIT_JOURNAL_RECORD_MAX_BYTES.
//   A DEL that cannot be journaled — full, too large, an unsafe directory, a write error — is
//   answered code 11 (DEL_NOT_JOURNALED, naming why): never success without its record.
// An ADD run in direct mode first removes its attachment's record, so a journal written earlier
// can never release it (the agent does the same for every ADD it serves: journal.ts).
#ifndef IPAMKIT_FORWARDER_JOURNAL_H
#define IPAMKIT_FORWARDER_JOURNAL_H
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include "forwarder-agent.h"
#include "forwarder-journal-name.h"

#if !defined(IPAMKIT_JOURNAL_MAX_RECORDS) || !defined(IPAMKIT_JOURNAL_RECORD_MAX_BYTES) || !defined(IPAMKIT_JOURNAL_TEMP_PREFIX) || \
    !defined(IPAMKIT_JOURNAL_VERSION)
#error "build.mjs generates the IPAMKIT_* macros from packages/cni; build with `node build.mjs`"
#endif

// The longest pause between two attempts at the directory's lock.
#define JOURNAL_LOCK_PAUSE_MAX_MS 20.0

// A directory that may hold records: a directory (not a link to one: opened O_NOFOLLOW) of root's
// or this user's that neither group nor others may write.
static int journal_dir_trusted(int dir) {
  struct stat st;
  return fstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_uid == 0 || st.st_uid == geteuid()) && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

// Creates `dir` and its missing parents (the parents 0755, `dir` itself 0700). -1 with errno set.
static int make_journal_dir(const char *dir) {
  char path[IPAMKIT_JOURNAL_DIR_MAX_BYTES + 1];
  snprintf(path, sizeof path, "%s", dir);
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(path, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

// The directory's entries but "." and "..", or -1.
static long count_entries(int dir) {
  int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return -1;
  }
  long n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  closedir(d);
  return n;
}

// Takes the directory's lock (flock) before the monotonic deadline `until`; -1 when it stayed held.
static int lock_journal(int dir, double until) {
  double pause = 1;
  while (flock(dir, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    double left = until - now_ms(CLOCK_MONOTONIC);
    if (errno != EWOULDBLOCK || left <= 0) return -1;
    sleep_ms(pause < left ? pause : left);
    pause = pause * 2 < JOURNAL_LOCK_PAUSE_MAX_MS ? pause * 2 : JOURNAL_LOCK_PAUSE_MAX_MS;
  }
  return 0;
}

// Writes `record` as `name` in the (locked, trusted) directory: temporary file, fsync, rename, fsync
// of the directory. -1 with `why` filled.
static int write_record(int dir, const char *name, const struct buf *record, char *why, size_t size) {
  char temp[64];
  snprintf(temp, sizeof temp, "%s%ld-%.0f", IPAMKIT_JOURNAL_TEMP_PREFIX, (long)getpid(), now_ms(CLOCK_MONOTONIC) * 1000.0);
  int fd = openat(dir, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return snprintf(why, size, IPAMKIT_T_JOURNAL_IO, "create", strerror(errno)), -1;
  const char *step = write_all(fd, record->data, record->len) ? "write" : fchmod(fd, 0600) ? "chmod" : fsync(fd) ? "fsync" : NULL;
  int error = errno;
  if (close(fd) != 0 && !step) step = "close", error = errno;
  if (!step && renameat(dir, temp, dir, name) != 0) step = "rename", error = errno;
  if (step) {
    unlinkat(dir, temp, 0);
    return snprintf(why, size, IPAMKIT_T_JOURNAL_IO, step, strerror(error)), -1;
  }
  // the rename is durable once the directory is: a failure here is reported, the record stays
  if (fsync(dir) != 0) return snprintf(why, size, IPAMKIT_T_JOURNAL_IO, "fsync", strerror(errno)), -1;
  return 0;
}

// write_record() unless that adds an entry to a full journal (a record replaced does not grow it).
static int write_within_bound(int dir, const char *name, const struct buf *record, char *why, size_t size) {
  struct stat st;
  long entries = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : count_entries(dir);
  if (entries < 0) return snprintf(why, size, IPAMKIT_T_JOURNAL_IO, "readdir", strerror(errno)), -1;
  if (entries >= IPAMKIT_JOURNAL_MAX_RECORDS) return snprintf(why, size, IPAMKIT_T_JOURNAL_FULL, IPAMKIT_JOURNAL_MAX_RECORDS), -1;
  return write_record(dir, name, record, why, size);
}

// Journals this DEL (stdin `in`, the environment) in route->journal before the monotonic deadline
// `until`. 0 and `name` (IPAMKIT_JOURNAL_NAME_MAX_BYTES + 1 bytes) filled, or -1 and `why` saying
// why not.
static int journal_del(const struct route *route, const struct buf *in, double until, char *name, char *why, size_t size) {
  if (!route->journal[0]) return snprintf(why, size, IPAMKIT_T_JOURNAL_NO_DIR, IPAMKIT_JOURNAL_DIR_MAX_BYTES), -1;
  const char *command = last_env("CNI_COMMAND");
  if (!command || strcmp(command, "DEL") != 0 || journal_record_name(config_document(in), in->data + in->len, name))
    return snprintf(why, size, IPAMKIT_T_JOURNAL_NO_KEY, IPAMKIT_JOURNAL_NAME_MAX_BYTES), -1;
  static char record_space[STATIC_BYTES];
  struct buf record = STATIC_BUF(record_space);
  char head[64];
  snprintf(head, sizeof head, "{\"v\":%d,\"journaled\":%.0f", IPAMKIT_JOURNAL_VERSION, now_ms(CLOCK_REALTIME));
  if (append_str(&record, head) || append_call(&record, in) || record.len > IPAMKIT_JOURNAL_RECORD_MAX_BYTES)
    return snprintf(why, size, IPAMKIT_T_JOURNAL_TOO_LARGE, IPAMKIT_JOURNAL_RECORD_MAX_BYTES), -1;
  int dir = open(route->journal, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0 && errno == ENOENT && make_journal_dir(route->journal) == 0) dir = open(route->journal, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return snprintf(why, size, IPAMKIT_T_JOURNAL_IO, "open", strerror(errno)), -1;
  int result = -1;
  if (!journal_dir_trusted(dir)) snprintf(why, size, IPAMKIT_T_JOURNAL_UNSAFE);
  else if (lock_journal(dir, until)) snprintf(why, size, IPAMKIT_T_JOURNAL_BUSY, route->timeout_seconds);
  else result = write_within_bound(dir, name, &record, why, size);
  close(dir);  // and its lock
  return result;
}

// An ADD about to run in direct mode: its attachment's record, if any, is removed first, so no
// later replay releases what this ADD reserves (or finds still reserved and keeps).
static void journal_purge(const struct route *route, const struct buf *in) {
  char name[IPAMKIT_JOURNAL_NAME_MAX_BYTES + 1];
  if (!route->journal[0] || journal_record_name(config_document(in), in->data + in->len, name)) return;
  int dir = open(route->journal, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return;
  if (journal_dir_trusted(dir)) unlinkat(dir, name, 0);
  close(dir);
}

#endif
