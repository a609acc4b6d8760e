/*
 * The simulation's process launcher: spawns CNI processes the way a Go runtime (kubelet, containerd,
 * Multus) does — posix_spawn, which is vfork + exec, no copy of the parent's page tables — instead
 * of Node's fork of a large process. One launcher serves every call of a simulation.
 *
 * Frames (integers are 32-bit little-endian on both sides; this machine's order):
 *   request  (stdin):  id, then strings as length + bytes: the path, the argument count and each
 *                      argument (after argv[0], which is the path), the env count and each
 *                      KEY=VALUE, the child's stdin
 *   response (stdout): id, status (exit code, or 128 + signal), user µs, system µs, minor page
 *                      faults (the child's own, from wait4), the child's stdout as length + bytes
 * The path is looked up in the launcher's own PATH. The child's stderr goes to /dev/null. A request
 * this launcher cannot spawn answers status 127.
 * It exits when its stdin closes and every child has been answered.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CHILDREN 256

struct child {
  uint32_t id;
  pid_t pid;
  int out;
  char *buf;
  size_t len, cap;
};

static struct child children[MAX_CHILDREN];
static int nchildren;
static char *in;
static size_t inlen, incap;

static void die(const char *what) {
  perror(what);
  exit(2);
}

/* Writes everything; false when the reader has gone (EPIPE). */
static int write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EPIPE) return 0;
    if (w < 0) die("launcher: write");
    p += w;
    n -= (size_t)w;
  }
  return 1;
}

static void append(char **buf, size_t *len, size_t *cap, const char *data, size_t n) {
  if (*len + n > *cap) {
    *cap = (*len + n) * 2;
    *buf = realloc(*buf, *cap);
    if (*buf == NULL) die("launcher: realloc");
  }
  memcpy(*buf + *len, data, n);
  *len += n;
}

static void respond(uint32_t id, uint32_t status, const struct rusage *ru, const char *out, uint32_t outlen) {
  uint32_t head[6] = {id, status, (uint32_t)(ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec),
                      (uint32_t)(ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec), (uint32_t)ru->ru_minflt, outlen};
  /* the simulation gone: nobody to answer */
  if (!write_all(1, head, sizeof head) || (outlen > 0 && !write_all(1, out, outlen))) exit(0);
}

/* Reads a count at *at; false when the frame is not complete yet. */
static int count(size_t *at, uint32_t *n) {
  if (*at + 4 > inlen) return 0;
  memcpy(n, in + *at, 4);
  *at += 4;
  return 1;
}

/* Reads a length-prefixed string at *at; NULL when the frame is not complete yet. */
static char *field(size_t *at, uint32_t *n) {
  if (!count(at, n) || *at + *n > inlen) return NULL;
  char *s = in + *at;
  *at += *n;
  return s;
}

/* Reads `n` strings at *at into NUL-terminated copies at list[first..]; false when incomplete. */
static int strings(size_t *at, uint32_t n, char **list, uint32_t first) {
  for (uint32_t i = 0; i < n; i++) {
    uint32_t len;
    char *s = field(at, &len);
    if (s == NULL) return 0;
    list[first + i] = strndup(s, len);
  }
  return 1;
}

static void free_list(char **list) {
  for (char **p = list; *p != NULL; p++) free(*p);
  free(list);
}

/* Spawns one complete request frame at the start of `in`; returns its length, 0 if incomplete. */
static size_t take_request(void) {
  size_t at = 0;
  uint32_t id, n, argc, envc;
  if (!count(&at, &id)) return 0;
  char *path = field(&at, &n);
  if (path == NULL || !count(&at, &argc)) return 0;
  char **argv = calloc(argc + 2, sizeof *argv);
  argv[0] = strndup(path, n);
  char **envp = NULL;
  char *stdin_data = NULL;
  uint32_t stdinlen = 0;
  if (strings(&at, argc, argv, 1) && count(&at, &envc)) {
    envp = calloc(envc + 1, sizeof *envp);
    if (strings(&at, envc, envp, 0)) stdin_data = field(&at, &stdinlen);
  }
  if (stdin_data == NULL) { /* not all here yet: parsed again when more arrives */
    free_list(argv);
    if (envp != NULL) free_list(envp);
    return 0;
  }
  int inpipe[2], outpipe[2];
  if (pipe2(inpipe, O_CLOEXEC) != 0 || pipe2(outpipe, O_CLOEXEC) != 0) die("launcher: pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, inpipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, outpipe[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int failed = posix_spawnp(&pid, argv[0], &actions, NULL, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  close(inpipe[0]);
  close(outpipe[1]);
  if (failed != 0) {
    struct rusage none = {0};
    respond(id, 127, &none, NULL, 0);
    close(inpipe[1]);
    close(outpipe[0]);
  } else {
    /* a CNI configuration fits a pipe's buffer (64 KiB), so this write does not wait for the child */
    /* (a child that exits without reading it is answered all the same) */
    write_all(inpipe[1], stdin_data, stdinlen);
    close(inpipe[1]);
    children[nchildren++] = (struct child){.id = id, .pid = pid, .out = outpipe[0]};
  }
  free_list(argv);
  free_list(envp);
  return at;
}

/* The child closed its stdout: reap it and answer. */
static void finish(int k) {
  struct child *c = &children[k];
  int status;
  struct rusage ru;
  while (wait4(c->pid, &status, 0, &ru) < 0)
    if (errno != EINTR) die("launcher: wait4");
  uint32_t code = WIFEXITED(status) ? (uint32_t)WEXITSTATUS(status) : 128 + (uint32_t)WTERMSIG(status);
  respond(c->id, code, &ru, c->buf, (uint32_t)c->len);
  close(c->out);
  free(c->buf);
  children[k] = children[--nchildren];
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  int open_in = 1;
  struct pollfd fds[MAX_CHILDREN + 1];
  char chunk[65536];
  while (open_in || nchildren > 0) {
    int n = 0;
    /* no new request while the table is full: the simulation limits concurrency well below it */
    if (open_in && nchildren < MAX_CHILDREN) fds[n++] = (struct pollfd){.fd = 0, .events = POLLIN};
    int first_child = n;
    for (int k = 0; k < nchildren; k++) fds[n++] = (struct pollfd){.fd = children[k].out, .events = POLLIN};
    if (poll(fds, (nfds_t)n, -1) < 0) {
      if (errno == EINTR) continue;
      die("launcher: poll");
    }
    /* children first, from the end, as finish() moves the last child into the freed slot */
    for (int k = nchildren - 1; k >= 0; k--) {
      if (fds[first_child + k].revents == 0) continue;
      ssize_t r = read(children[k].out, chunk, sizeof chunk);
      if (r > 0)
        append(&children[k].buf, &children[k].len, &children[k].cap, chunk, (size_t)r);
      else if (r == 0 || errno != EINTR)
        finish(k);
    }
    if (first_child == 1 && fds[0].revents != 0) {
      ssize_t r = read(0, chunk, sizeof chunk);
      if (r == 0) open_in = 0;
      else if (r < 0 && errno != EINTR) die("launcher: read");
      else if (r > 0)
        append(&in, &inlen, &incap, chunk, (size_t)r);
    }
    /* every complete request buffered, as far as the table has room (also after a child's slot frees) */
    size_t used;
    while (nchildren < MAX_CHILDREN && (used = take_request()) > 0) {
      memmove(in, in + used, inlen - used);
      inlen -= used;
    }
  }
  return 0;
}
