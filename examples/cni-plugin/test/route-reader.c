// The binary's JSON reader and route decision (src/forwarder-route.h) over many cases in one
// process, for src/forwarder-differential.test.ts: stdin holds frames of
//   <u32 LE length><config bytes><u32 LE length, 0xFFFFFFFF: no flat file><flat file bytes>
// and each frame's answer is one line:
//   <readable 0|1> <agent 0|1> <socket as hex, "-" when empty> <required 0|1> <timeout %.17g> <uid>
// Built by the test with ASan and UBSan (clang), so undefined behaviour on a case fails it too.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "../src/forwarder-route.h"

static int read_exact(void *out, size_t n) { return fread(out, 1, n, stdin) == n ? 0 : -1; }

static char *read_frame(uint32_t *len, int *absent) {
  if (read_exact(len, 4)) return NULL;
  *absent = *len == UINT32_MAX;
  if (*absent) *len = 0;
  char *data = malloc(*len ? *len : 1);
  if (!data || read_exact(data, *len)) exit(2);
  return data;
}

int main(void) {
  for (;;) {
    uint32_t conf_len, flat_len;
    int absent;
    char *conf = read_frame(&conf_len, &absent);
    if (!conf) return 0;
    char *flat_text = read_frame(&flat_len, &absent);
    if (!flat_text) return 2;
    const char *document = json_document(conf, conf_len);
    struct doc flat = {0};
    const char *flat_value = absent ? NULL : json_document(flat_text, flat_len);
    if (flat_value && *flat_value == '{') flat = (struct doc){flat_value, flat_text + flat_len};
    struct route route;
    decide_route(document, conf + conf_len, &flat, &route);
    printf("%d %d ", document != NULL, route.agent);
    if (!route.agent || !route.socket[0]) printf("-");
    for (const unsigned char *c = (const unsigned char *)route.socket; route.agent && *c; c++) printf("%02x", *c);
    printf(" %d %.17g %ld\n", route.required, route.timeout_seconds, route.uid);
    free(conf);
    free(flat_text);
  }
}
