/* Unit tests: code_map (src/cpu/code_map.c), the code cache's ranges. */
#include "unit.h"

#include <stdint.h>

#include "cpu/code_map.h"

TEST(code_map_finds_adds_replaces_and_removes)
{
    code_map *m = code_map_new();
    CHECK(m != NULL);
    uint64_t method = 0;
    CHECK(code_map_find(m, 0x1000, &method) == CODE_NONE);              /* empty */
    CHECK(code_map_add(m, 0x1000, 0x100, CODE_COMPILED, 0xa1) == 0);
    CHECK(code_map_add(m, 0x3000, 0x100, CODE_COMPILED, 0xa3) == 0);
    CHECK(code_map_add(m, 0x2000, 0x800, CODE_INTERPRETER, 0) == 0);  /* in between */
    CHECK(code_map_add(m, 0x5000, 0, CODE_COMPILED, 0xa5) == 0 && code_map_count(m) == 3);  /* empty range: no-op */
    CHECK(code_map_find(m, 0x1000, &method) == CODE_COMPILED && method == 0xa1);
    CHECK(code_map_find(m, 0x10ff, &method) == CODE_COMPILED && method == 0xa1);
    CHECK(code_map_find(m, 0x1100, NULL) == CODE_NONE);                 /* end is outside */
    CHECK(code_map_find(m, 0x27ff, NULL) == CODE_INTERPRETER);
    CHECK(code_map_find(m, 0x3080, &method) == CODE_COMPILED && method == 0xa3);
    CHECK(code_map_find(m, 0xfff, NULL) == CODE_NONE && code_map_find(m, 0x9000, NULL) == CODE_NONE);
    /* Code freed unseen and reused: the new range replaces both it overlaps. */
    CHECK(code_map_add(m, 0x10f0, 0x1000, CODE_COMPILED, 0xb1) == 0);
    CHECK(code_map_count(m) == 2);
    CHECK(code_map_find(m, 0x1000, NULL) == CODE_NONE);
    CHECK(code_map_find(m, 0x2000, &method) == CODE_COMPILED && method == 0xb1);
    CHECK(code_map_find(m, 0x3000, &method) == CODE_COMPILED && method == 0xa3);
    /* Unload: by start address only. */
    code_map_remove(m, 0x3010);
    CHECK(code_map_count(m) == 2);
    code_map_remove(m, 0x3000);
    CHECK(code_map_count(m) == 1 && code_map_find(m, 0x3000, NULL) == CODE_NONE);
    /* Many, out of order: every one found. */
    for (uint64_t i = 0; i < 5000; i++)
        CHECK(code_map_add(m, 0x100000 + ((i * 7919) % 5000) * 0x40, 0x40, CODE_COMPILED, i) == 0);
    CHECK(code_map_count(m) == 5001);
    int all = 1;
    for (uint64_t i = 0; i < 5000; i++)
        all &= code_map_find(m, 0x100000 + ((i * 7919) % 5000) * 0x40 + 0x3f, &method) == CODE_COMPILED &&
               method == i;
    CHECK(all);
    code_map_clear(m);
    CHECK(code_map_count(m) == 0 && code_map_find(m, 0x2000, NULL) == CODE_NONE);
    code_map_free(m);
}
