/*
 * A minimal unit-test harness: TEST(name) defines and registers a test,
 * CHECK(cond) records a failure with file:line and goes on. The runner
 * (unit_main.c) prints PASS/FAIL per test and a closing "N passed, N failed".
 */
#ifndef HPROF_UNIT_H
#define HPROF_UNIT_H

#include <stdio.h>
#include <string.h>

typedef void (*unit_fn)(void);
void unit_register(const char *name, unit_fn fn);
void unit_fail(const char *file, int line, const char *expr);

#define TEST(name)                                                        \
    static void name(void);                                               \
    __attribute__((constructor)) static void register_##name(void)        \
    { unit_register(#name, name); }                                       \
    static void name(void)

#define CHECK(cond) do { if (!(cond)) unit_fail(__FILE__, __LINE__, #cond); } while (0)
#define CHECK_STR(a, b) unit_check_str(__FILE__, __LINE__, #a, (a), (b))
void unit_check_str(const char *file, int line, const char *expr, const char *got,
                    const char *want);

#endif
