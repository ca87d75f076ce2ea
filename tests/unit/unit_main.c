/* The unit-test runner: runs every registered test (or those whose name
 * contains argv[1]) and ends with "N passed, N failed". */
#include "unit.h"

#include <stdlib.h>

#define MAX_TESTS 256

static struct { const char *name; unit_fn fn; } tests[MAX_TESTS];
static int ntests;
static int current_failures;
static char first_failure[600];

void unit_register(const char *name, unit_fn fn)
{
    if (ntests < MAX_TESTS) {
        tests[ntests].name = name;
        tests[ntests].fn = fn;
        ntests++;
    }
}

void unit_fail(const char *file, int line, const char *expr)
{
    if (current_failures++ == 0)
        snprintf(first_failure, sizeof first_failure, "%s:%d: CHECK(%s)", file, line, expr);
    else if (current_failures <= 10)
        fprintf(stderr, "    also %s:%d: %s\n", file, line, expr);
}

void unit_check_str(const char *file, int line, const char *expr, const char *got,
                    const char *want)
{
    if (got != NULL && want != NULL && strcmp(got, want) == 0)
        return;
    char msg[600];
    snprintf(msg, sizeof msg, "%.120s == \"%.200s\" (got \"%.200s\")", expr,
             want ? want : "(null)", got ? got : "(null)");
    unit_fail(file, line, msg);
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < ntests; i++) {
        if (argc > 1 && strstr(tests[i].name, argv[1]) == NULL)
            continue;
        current_failures = 0;
        tests[i].fn();
        if (current_failures == 0) {
            printf("PASS %s\n", tests[i].name);
            passed++;
        } else {
            printf("FAIL %s: %s\n", tests[i].name, first_failure);
            failed++;
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
