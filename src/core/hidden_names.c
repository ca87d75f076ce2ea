/*
 * hidden_names: class and frame names without what differs from run to run
 * in HotSpot's names of hidden classes (see hidden_names.h).
 *
 * Pure C.
 */
#include "hidden_names.h"

#include <string.h>

/* out (the name kept so far) less JDK 17's lambda counter at its end:
 * "Foo$$Lambda$14" -> "Foo$$Lambda". Only before a hidden class's address,
 * so a class really named so is left alone. */
static size_t drop_lambda_counter(const char *name, size_t out)
{
    static const char lambda[] = "$$Lambda$";
    size_t d = out;
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
        d--;
    size_t n = sizeof lambda - 1;
    if (d == out || d < n || memcmp(name + d - n, lambda, n) != 0)
        return out;
    return d - 1;
}

/* A Java identifier cannot start with a digit, so ".0x<hex>" followed by
 * '.' or the end is never part of a real name. JDK 17 also numbers its
 * lambda classes in the order they were made (Foo$$Lambda$14.0x...), which
 * differs from run to run as much as the address: that goes too. */
size_t hidden_name_drop_addresses(char *name, size_t len)
{
    size_t out = 0;
    for (size_t i = 0; i < len; ) {
        if (name[i] == '.' && i + 3 <= len && name[i + 1] == '0' && name[i + 2] == 'x') {
            size_t j = i + 3;
            while (j < len && ((name[j] >= '0' && name[j] <= '9') || (name[j] >= 'a' && name[j] <= 'f') ||
                               (name[j] >= 'A' && name[j] <= 'F')))
                j++;
            if (j > i + 3 && (j == len || name[j] == '.')) {
                out = drop_lambda_counter(name, out);
                i = j;
                continue;
            }
        }
        name[out++] = name[i++];
    }
    name[out] = '\0';
    return out;
}
