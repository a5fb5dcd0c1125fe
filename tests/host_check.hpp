// The counting CHECK of the CPU tests of the plan layers (tests/sm90_host, tests/sm100_host):
// a failed condition prints its location and message (the first 30), and
// check_summary() prints "P passed, F failed" (the line the pytest runners look for) and
// returns the process exit code.
#pragma once

#include <stdio.h>

static int g_passed = 0, g_failed = 0;
#define CHECK(cond, ...)                                        \
  do {                                                          \
    if (cond) {                                                 \
      ++g_passed;                                               \
    } else {                                                    \
      ++g_failed;                                               \
      if (g_failed <= 30) {                                     \
        printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
        printf(__VA_ARGS__);                                    \
        printf("\n");                                           \
      }                                                         \
    }                                                           \
  } while (0)

static inline int check_summary() {
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
