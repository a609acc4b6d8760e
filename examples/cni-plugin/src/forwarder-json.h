// A small strict JSON reader for src/forwarder.c: it accepts what JSON.parse accepts (RFC 8259,
// whitespace space/tab/CR/LF only), finds a member of an object (the last one of that name wins,
// as in JSON.parse) and decodes strings to UTF-8 as Node reads the same bytes (invalid UTF-8 and
// lone surrogates become U+FFFD). A decoded U+0000 is refused: a C string cannot hold it, and a key
// or value cut there would read as another (json_decode_string fails, the member matches nothing).
// No allocation: every result points into the text. forwarder-differential.test.ts checks it
// against JSON.parse and agentSettings(); fuzz/forwarder-fuzz.c runs it under ASan and UBSan.
#ifndef IPAMKIT_FORWARDER_JSON_H
#define IPAMKIT_FORWARDER_JSON_H
#include <stddef.h>
#include "forwarder-generated.h"
#include <string.h>

// Documents whose containers nest deeper are unreadable (JSON.parse goes further; no CNI config
// comes close): IPAMKIT_JSON_MAX_NESTING, generated from agent-settings.ts, which applies the same bound.
#ifndef IPAMKIT_JSON_MAX_NESTING
#error "build.mjs generates the IPAMKIT_* macros from packages/cni; build with `node build.mjs`"
#endif
#define JSON_MAX_DEPTH IPAMKIT_JSON_MAX_NESTING

static const char *json_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

static int json_hex(const char *p, const char *end, unsigned *out) {
  unsigned v = 0;
  if (end - p < 4) return -1;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return -1;
  }
  *out = v;
  return 0;
}

// The end of the string starting at p (at its opening quote), just past the closing quote; NULL if invalid.
static const char *json_skip_string(const char *p, const char *end) {
  if (p >= end || *p != '"') return NULL;
  for (p++; p < end; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"') return p + 1;
    if (c < 0x20) return NULL;
    if (c != '\\') continue;
    if (++p >= end) return NULL;
    unsigned u;
    if (*p == 'u') {
      if (json_hex(p + 1, end, &u)) return NULL;
      p += 4;
    } else if (*p == '\0' || !strchr("\"\\/bfnrt", *p)) {  // strchr finds the terminator: a raw NUL is no escape
      return NULL;
    }
  }
  return NULL;
}

static const char *json_skip_number(const char *p, const char *end) {
  if (p < end && *p == '-') p++;
  if (p >= end) return NULL;
  if (*p == '0') p++;
  else if (*p >= '1' && *p <= '9')
    while (p < end && *p >= '0' && *p <= '9') p++;
  else return NULL;
  if (p < end && *p == '.') {
    const char *digits = ++p;
    while (p < end && *p >= '0' && *p <= '9') p++;
    if (p == digits) return NULL;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    const char *digits = p;
    while (p < end && *p >= '0' && *p <= '9') p++;
    if (p == digits) return NULL;
  }
  return p;
}

// The end of the value starting at p (no leading whitespace); NULL if it is not valid JSON.
// `depth`: the containers around p; a container that would be the (JSON_MAX_DEPTH + 1)th is refused.
static const char *json_skip_value(const char *p, const char *end, int depth) {
  if (p >= end) return NULL;
  static const char *const words[] = {"true", "false", "null"};
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(words[i]);
    if ((size_t)(end - p) >= n && memcmp(p, words[i], n) == 0) return p + n;
  }
  if (*p == '"') return json_skip_string(p, end);
  if (*p != '{' && *p != '[') return json_skip_number(p, end);
  if (depth >= JSON_MAX_DEPTH) return NULL;
  char close = *p == '{' ? '}' : ']';
  p = json_ws(p + 1, end);
  if (p < end && *p == close) return p + 1;
  for (;;) {
    if (close == '}') {
      p = json_skip_string(p, end);
      if (!p) return NULL;
      p = json_ws(p, end);
      if (p >= end || *p != ':') return NULL;
      p = json_ws(p + 1, end);
    }
    p = json_skip_value(p, end, depth + 1);
    if (!p) return NULL;
    p = json_ws(p, end);
    if (p < end && *p == ',') p = json_ws(p + 1, end);
    else if (p < end && *p == close) return p + 1;
    else return NULL;
  }
}

// Where the document's single value starts, or NULL when the text is not one JSON document.
static const char *json_document(const char *p, size_t n) {
  const char *end = p + n;
  const char *start = json_ws(p, end);
  const char *after = json_skip_value(start, end, 0);
  return after && json_ws(after, end) == end ? start : NULL;
}

// Appends code point cp as UTF-8 to out (n bytes used of size, one kept for the terminator); -1 when it does not fit.
static int json_put_utf8(unsigned cp, char *out, size_t *n, size_t size) {
  char utf8[4];
  size_t len = 1;
  if (cp < 0x80) utf8[0] = (char)cp;
  else if (cp < 0x800) utf8[0] = (char)(0xC0 | cp >> 6), utf8[1] = (char)(0x80 | (cp & 0x3F)), len = 2;
  else if (cp < 0x10000)
    utf8[0] = (char)(0xE0 | cp >> 12), utf8[1] = (char)(0x80 | ((cp >> 6) & 0x3F)), utf8[2] = (char)(0x80 | (cp & 0x3F)), len = 3;
  else
    utf8[0] = (char)(0xF0 | cp >> 18), utf8[1] = (char)(0x80 | ((cp >> 12) & 0x3F)), utf8[2] = (char)(0x80 | ((cp >> 6) & 0x3F)),
    utf8[3] = (char)(0x80 | (cp & 0x3F)), len = 4;
  if (*n + len + 1 > size) return -1;
  memcpy(out + *n, utf8, len);
  *n += len;
  return 0;
}

// Decodes the string at p (valid, at its opening quote) to UTF-8 in out (NUL-terminated); -1 when
// it does not fit or holds U+0000. Raw bytes are decoded as the WHATWG UTF-8 decoder (Node's
// Buffer#toString) does: each maximal invalid subpart becomes U+FFFD; so does a lone surrogate escape.
static int json_decode_string(const char *p, const char *end, char *out, size_t size) {
  size_t n = 0;
  unsigned cp = 0, needed = 0, seen = 0, lower = 0x80, upper = 0xBF;
  if (size == 0) return -1;
  for (p++; p < end;) {
    unsigned char c = (unsigned char)*p;
    if (needed > 0) {
      if (c < lower || c > upper) {
        // an incomplete sequence: U+FFFD, and this byte is read again on its own
        needed = seen = 0, lower = 0x80, upper = 0xBF;
        if (json_put_utf8(0xFFFD, out, &n, size)) return -1;
        continue;
      }
      lower = 0x80, upper = 0xBF;
      cp = cp << 6 | (c & 0x3F);
      p++;
      if (++seen == needed) {
        needed = seen = 0;
        if (json_put_utf8(cp, out, &n, size)) return -1;
      }
      continue;
    }
    if (c == '"') break;
    p++;
    if (c >= 0xC2 && c <= 0xDF) {
      needed = 1, cp = c & 0x1F;
      continue;
    } else if (c >= 0xE0 && c <= 0xEF) {
      if (c == 0xE0) lower = 0xA0;
      if (c == 0xED) upper = 0x9F;
      needed = 2, cp = c & 0x0F;
      continue;
    } else if (c >= 0xF0 && c <= 0xF4) {
      if (c == 0xF0) lower = 0x90;
      if (c == 0xF4) upper = 0x8F;
      needed = 3, cp = c & 0x07;
      continue;
    } else if (c >= 0x80) {
      cp = 0xFFFD;
    } else if (c != '\\') {
      cp = c;
    } else {
      char e = *p++;
      switch (e) {
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u': {
          if (json_hex(p, end, &cp)) return -1;
          p += 4;
          unsigned low;
          if (cp >= 0xD800 && cp < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u' && !json_hex(p + 2, end, &low) && low >= 0xDC00 &&
              low < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            p += 6;
          } else if (cp >= 0xD800 && cp < 0xE000) {
            cp = 0xFFFD;
          }
          break;
        }
        default: cp = (unsigned char)e;
      }
    }
    if (cp == 0) return -1;
    if (json_put_utf8(cp, out, &n, size)) return -1;
  }
  // a sequence cut by the closing quote
  if (needed > 0 && json_put_utf8(0xFFFD, out, &n, size)) return -1;
  out[n] = '\0';
  return 0;
}

// In the (valid) value at p: when it is an object, where its last member named `key` starts; else NULL.
static const char *json_member(const char *p, const char *end, const char *key) {
  if (!p || p >= end || *p != '{') return NULL;
  const char *found = NULL;
  p = json_ws(p + 1, end);
  while (p < end && *p == '"') {
    const char *name_end = json_skip_string(p, end);
    char name[64];
    int match = json_decode_string(p, end, name, sizeof name) == 0 && strcmp(name, key) == 0;
    p = json_ws(json_ws(name_end, end) + 1, end);
    if (match) found = p;
    p = json_ws(json_skip_value(p, end, 1), end);
    if (p < end && *p == ',') p = json_ws(p + 1, end);
  }
  return found;
}

// The value at p is the JSON string s (decoded): 1, else 0.
static int json_is_string(const char *p, const char *end, const char *s) {
  char text[256];
  return p && p < end && *p == '"' && json_decode_string(p, end, text, sizeof text) == 0 && strcmp(text, s) == 0;
}

#endif
