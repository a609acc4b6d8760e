// The agent's answer in the "raw" frame, for src/forwarder-agent.h: "raw <exit code> <stdout bytes>
// <stderr bytes>\n" then both texts (packages/agent/src/protocol.ts). Pure (no I/O): the fuzz target
// (fuzz/forwarder-fuzz.c) runs it under ASan and UBSan.
#ifndef IPAMKIT_FORWARDER_ANSWER_H
#define IPAMKIT_FORWARDER_ANSWER_H
#include <stdlib.h>
#include <string.h>

struct answer {
  int code;
  const char *out, *err;
  size_t out_len, err_len;
};

// 0 and `a` filled when `text` is exactly one answer of this protocol; -1 otherwise.
static int parse_answer(const char *text, size_t len, struct answer *a) {
  const char *nl = len > 0 ? memchr(text, '\n', len) : NULL;
  if (!nl || len < 4 || memcmp(text, "raw ", 4) != 0) return -1;
  char header[96];
  size_t hn = (size_t)(nl - text);
  if (hn >= sizeof header) return -1;
  memcpy(header, text, hn);
  header[hn] = '\0';
  // digits and single spaces only: sscanf alone would take signs, leading spaces and overflowing numbers
  for (size_t i = 4; i < hn; i++)
    if (!(header[i] >= '0' && header[i] <= '9') && !(header[i] == ' ' && header[i - 1] != ' ')) return -1;
  unsigned long code, out_len, err_len;
  char *at = header + 4, *next;
  code = strtoul(at, &next, 10);
  if (next == at || *next != ' ' || next - at > 3) return -1;
  at = next + 1;
  out_len = strtoul(at, &next, 10);
  if (next == at || *next != ' ' || next - at > 12) return -1;
  at = next + 1;
  err_len = strtoul(at, &next, 10);
  if (next == at || *next != '\0' || next - at > 12) return -1;
  if (code > 255) return -1;
  size_t body_len = len - hn - 1;
  if (out_len > body_len || err_len != body_len - out_len) return -1;
  a->code = (int)code;
  a->out = nl + 1;
  a->out_len = (size_t)out_len;
  a->err = nl + 1 + out_len;
  a->err_len = (size_t)err_len;
  return 0;
}

#endif
