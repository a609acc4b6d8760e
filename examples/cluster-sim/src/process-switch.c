// What this machine charges for many processes taking turns, measured without Node (pnpm process-switch):
//
//   process-switch ring K KB HOPS   K processes pass one token round a ring of pipes; each, when it
//                                   wakes, writes one byte in every 64-byte line of its own KB KiB
//                                   (its working set), then wakes the next. Prints the CPU of all K
//                                   (user, system) and the wall time, in microseconds per hop.
//   process-switch faults KB ROUNDS touches KB KiB of fresh memory, hands it back (MADV_DONTNEED),
//                                   again and again, as V8 does with its young generation's pages;
//                                   prints the CPU (the madvise calls included) in microseconds per
//                                   4 KiB page faulted in, and the faults counted.
//
// Output: one line of space-separated numbers, read by src/process-switch.ts.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static char *working_set(long bytes) {
  if (bytes == 0) return NULL;
  char *m = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  return m;
}

static void touch(char *m, long bytes) {
  for (long i = 0; i < bytes; i += 64) m[i]++;
}

static int ring(int k, long bytes, long hops) {
  int(*pipes)[2] = calloc((size_t)k, sizeof *pipes);
  if (pipes == NULL) return 2;
  for (int i = 0; i < k; i++)
    if (pipe(pipes[i]) != 0) {
      perror("pipe");
      return 2;
    }
  long turns = hops / k;
  double started = now();
  for (int i = 0; i < k; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return 2;
    }
    if (pid > 0) continue;
    char *m = working_set(bytes);
    if (m != NULL) memset(m, 0, (size_t)bytes); // faulted in before the first turn, not during the hops
    char token = 'x';
    for (long turn = 0; turn < turns; turn++) {
      if (!(i == 0 && turn == 0) && read(pipes[i][0], &token, 1) != 1) _exit(1);
      if (m != NULL) touch(m, bytes);
      if (write(pipes[(i + 1) % k][1], &token, 1) != 1) _exit(1);
    }
    _exit(0);
  }
  int failed = 0;
  for (int i = 0; i < k; i++) {
    int status;
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  double wall = now() - started;
  if (failed) {
    fprintf(stderr, "process-switch: a ring process failed\n");
    return 1;
  }
  struct rusage r;
  getrusage(RUSAGE_CHILDREN, &r);
  double n = (double)(turns * k);
  printf("%.2f %.2f %.2f\n", seconds(r.ru_utime) * 1e6 / n, seconds(r.ru_stime) * 1e6 / n, wall * 1e6 / n);
  return 0;
}

static int faults(long bytes, long rounds) {
  char *m = working_set(bytes);
  if (m == NULL) return 2;
  struct rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  for (long r = 0; r < rounds; r++) {
    for (long i = 0; i < bytes; i += 4096) m[i] = 1;
    if (madvise(m, (size_t)bytes, MADV_DONTNEED) != 0) {
      perror("madvise");
      return 2;
    }
  }
  getrusage(RUSAGE_SELF, &after);
  double cpu = seconds(after.ru_utime) - seconds(before.ru_utime) + seconds(after.ru_stime) - seconds(before.ru_stime);
  long faulted = after.ru_minflt - before.ru_minflt;
  if (faulted <= 0) {
    fprintf(stderr, "process-switch: no page faults counted\n");
    return 1;
  }
  printf("%.2f %ld\n", cpu * 1e6 / (double)faulted, faulted);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "ring") == 0) {
    int k = atoi(argv[2]);
    long kb = atol(argv[3]), hops = atol(argv[4]);
    if (k >= 1 && kb >= 0 && hops >= k) return ring(k, kb * 1024, hops);
  }
  if (argc == 4 && strcmp(argv[1], "faults") == 0) {
    long kb = atol(argv[2]), rounds = atol(argv[3]);
    if (kb >= 4 && rounds >= 1) return faults(kb * 1024, rounds);
  }
  fprintf(stderr, "usage: process-switch ring K KB HOPS | process-switch faults KB ROUNDS\n");
  return 2;
}
