/* The label at a key of a sample's json field (lib/format/wds_json.c):
 * found among other members of every JSON kind (nested objects and
 * arrays, strings holding brackets, quotes and escapes, numbers,
 * literals), the last occurrence winning as in Python's json; integers
 * only (a fraction, exponent, string or null is refused, as is one beyond
 * 64 bits); what is not a JSON object refused; nesting bounded. */
#include "format/wds_json.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static int get(const char *json, const char *key, int64_t *v) {
  return gf_wds_json_int((const uint8_t *)json, strlen(json), key, v);
}

#define FOUND(json, key, want)                                                 \
  do {                                                                         \
    int64_t v_ = -999;                                                         \
    CHECK(get(json, key, &v_) == GF_WDS_JSON_FOUND && v_ == (want));           \
  } while (0)
#define RESULT(json, key, want)                                                \
  do {                                                                         \
    int64_t v_;                                                                \
    CHECK(get(json, key, &v_) == (want));                                      \
  } while (0)

int main(void) {
  FOUND("{\"label\": 7}", "label", 7);
  FOUND(" {\"a\":1,\"label\":-12}\n", "label", -12);
  FOUND("{\"x\": {\"label\": 1, \"y\": [1, {\"z\": \"]}\"}]}, \"label\": 3}",
        "label", 3);
  FOUND("{\"s\": \"a \\\" } quote\", \"label\": 0}", "label", 0);
  FOUND("{\"t\": true, \"f\": false, \"n\": null, \"e\": 1.5e3, \"label\": 42}",
        "label", 42);
  FOUND("{\"label\": 1, \"label\": 2}", "label", 2); /* the last wins */
  FOUND("{\"label\": 9223372036854775807}", "label", INT64_MAX);
  FOUND("{\"label\": -9223372036854775808}", "label", INT64_MIN);
  RESULT("{\"label\": 9223372036854775808}", "label", GF_WDS_JSON_NOT_INT);
  RESULT("{\"label\": 1.0}", "label", GF_WDS_JSON_NOT_INT);
  RESULT("{\"label\": 1e2}", "label", GF_WDS_JSON_NOT_INT);
  RESULT("{\"label\": \"3\"}", "label", GF_WDS_JSON_NOT_INT);
  RESULT("{\"label\": null}", "label", GF_WDS_JSON_NOT_INT);
  RESULT("{\"label\": 012}", "label", GF_WDS_JSON_NOT_INT);
  RESULT("{\"lab\": 1}", "label", GF_WDS_JSON_ABSENT);
  RESULT("{}", "label", GF_WDS_JSON_ABSENT);
  RESULT("{\"x\": {\"label\": 5}}", "label", GF_WDS_JSON_ABSENT); /* nested */
  RESULT("[1, 2]", "label", GF_WDS_JSON_BAD);
  RESULT("", "label", GF_WDS_JSON_BAD);
  RESULT("{\"label\": 1", "label", GF_WDS_JSON_BAD);
  RESULT("{\"a\": [1, 2}, \"label\": 1}", "label", GF_WDS_JSON_BAD);
  RESULT("{\"a\": \"unterminated, \"label\": 1", "label", GF_WDS_JSON_BAD);
  RESULT("{label: 1}", "label", GF_WDS_JSON_BAD);
  /* Nesting beyond the bound is refused, not recursed into. */
  size_t deep = GF_WDS_JSON_DEPTH + 10;
  char *d = malloc(deep * 2 + 64);
  if (d) {
    strcpy(d, "{\"a\": ");
    size_t o = strlen(d);
    for (size_t i = 0; i < deep; i++)
      d[o++] = '[';
    for (size_t i = 0; i < deep; i++)
      d[o++] = ']';
    strcpy(d + o, ", \"label\": 1}");
    RESULT(d, "label", GF_WDS_JSON_BAD);
    free(d);
  }
  return gf_test_finish();
}
