// libFuzzer target of the static forwarder's parsers, built with ASan and UBSan by
// src/forwarder-fuzz.test.ts (bounded in `npm test`, longer under `pnpm reliability`): the JSON
// reader (src/forwarder-json.h: validation, member lookup, string decoding), the route decision
// (src/forwarder-route.h) and the agent's answer (src/forwarder-answer.h). One input is a config,
// then optionally the bytes 00 FF and a flat file (00 FF cannot occur in JSON text); the whole
// input is also read as an agent answer. The checked-in corpus (fuzz/corpus/) seeds each run.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../src/forwarder-answer.h"
#include "../src/forwarder-route.h"

static const char *split(const char *data, size_t size) {
  for (size_t i = 0; i + 1 < size; i++)
    if (data[i] == '\0' && (unsigned char)data[i + 1] == 0xFF) return data + i;
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
  const char *data = (const char *)bytes;
  const char *cut = split(data, size);
  size_t config_len = cut ? (size_t)(cut - data) : size;
  const char *document = json_document(data, config_len);
  struct doc flat = {0};
  if (cut) {
    const char *flat_text = cut + 2;
    size_t flat_len = size - config_len - 2;
    const char *value = json_document(flat_text, flat_len);
    if (value && *value == '{') flat = (struct doc){value, flat_text + flat_len};
  }
  struct route route;
  decide_route(document, data + config_len, &flat, &route);
  // every member of the top-level object, decoded, and looked up by its own name
  if (document && *document == '{') {
    const char *end = data + config_len;
    const char *p = json_ws(document + 1, end);
    while (p < end && *p == '"') {
      char name[64];
      if (json_decode_string(p, end, name, sizeof name) == 0) (void)json_member(document, end, name);
      p = json_ws(json_ws(json_skip_string(p, end), end) + 1, end);
      p = json_ws(json_skip_value(p, end, 1), end);
      if (p < end && *p == ',') p = json_ws(p + 1, end);
    }
  }
  // the flat file's name from a configuration path: checked lengths (never a cut path)
  char path[256], text[300];
  size_t n = config_len < sizeof text - 1 ? config_len : sizeof text - 1;
  memcpy(text, data, n);
  text[n] = '\0';
  if (flat_file_of(text, path, sizeof path) == 0 && strlen(path) >= sizeof path) abort();
  struct answer a;
  if (parse_answer(data, size, &a) == 0 && (a.out + a.out_len > data + size || a.err + a.err_len != data + size)) abort();
  return 0;
}
