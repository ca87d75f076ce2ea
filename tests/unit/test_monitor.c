/* Unit tests: the monitor time table and the deadlock cycle finder. */
#include "unit.h"

#include <stdlib.h>

#include "monitor/deadlock.h"
#include "monitor/monitor_table.h"

TEST(monitor_table_sums_and_orders)
{
    monitor_table_init();
    CHECK(monitor_table_add(300001, 0, 100001, BLOCK_ENTER, 5000000) == 0);
    CHECK(monitor_table_add(300001, 0, 100001, BLOCK_ENTER, 7000000) == 0);
    CHECK(monitor_table_add(300001, 0, 100001, BLOCK_WAIT, 1000000) == 0);   /* other kind: other row */
    CHECK(monitor_table_add(300002, 0, 100002, BLOCK_PARK, 20000000) == 0);
    monitor_row *rows;
    uint32_t n;
    uint64_t total;
    CHECK(monitor_table_rows(&rows, &n, &total) == 0);
    CHECK(n == 3 && total == 33000000);
    CHECK(rows[0].trace == 300002 && rows[0].kind == BLOCK_PARK && rows[0].count == 1);
    CHECK(rows[1].trace == 300001 && rows[1].kind == BLOCK_ENTER && rows[1].count == 2 &&
          rows[1].nanos == 12000000);
    CHECK(rows[2].kind == BLOCK_WAIT && rows[2].nanos == 1000000);
    free(rows);
    CHECK_STR(block_kind_name(BLOCK_PARK), "park");
    monitor_table_free();
}

TEST(monitor_table_reset_zeroes_rows)
{
    monitor_table_init();
    CHECK(monitor_table_add(300001, 0, 100001, BLOCK_ENTER, 5000000) == 0);
    CHECK(monitor_table_add(300002, 0, 100001, BLOCK_PARK, 1000) == 0);
    monitor_table_reset();
    monitor_row *rows;
    uint32_t n;
    uint64_t total;
    CHECK(monitor_table_rows(&rows, &n, &total) == 0);
    CHECK(n == 0 && total == 0);
    free(rows);
    CHECK(monitor_table_add(300001, 0, 100001, BLOCK_ENTER, 3000) == 0);
    CHECK(monitor_table_rows(&rows, &n, &total) == 0);
    CHECK(n == 1 && total == 3000 && rows[0].count == 1 && rows[0].trace == 300001);
    free(rows);
    monitor_table_free();
}

/* cycles as a string "a,b|c,d" for easy comparison */
static void cycles_text(const waiter *g, uint32_t n, char *buf, size_t size, uint32_t *count)
{
    uint32_t cyc[64];
    *count = find_deadlocks(g, n, cyc);
    buf[0] = '\0';
    uint32_t at = 0;
    for (uint32_t c = 0; c < *count; c++) {
        uint32_t len = cyc[at++];
        if (c)
            strncat(buf, "|", size - strlen(buf) - 1);
        for (uint32_t i = 0; i < len; i++) {
            char num[16];
            snprintf(num, sizeof num, "%s%u", i ? "," : "", cyc[at++]);
            strncat(buf, num, size - strlen(buf) - 1);
        }
    }
}

TEST(deadlock_finds_every_cycle_and_nothing_else)
{
    char buf[256];
    uint32_t count;
    /* 7->5->6->5: cycle {5,6}; 7 waits on it but is not on it.
     * 3->2->3: cycle {2,3}. 9->10, 10 runs: no cycle. 4->4: a self-wait. */
    waiter g[] = { { 7, 5 }, { 5, 6 }, { 6, 5 }, { 3, 2 }, { 2, 3 }, { 9, 10 }, { 10, 0 }, { 4, 4 },
                   { 11, 99 } /* waits for a thread not in the graph */ };
    cycles_text(g, sizeof g / sizeof g[0], buf, sizeof buf, &count);
    CHECK(count == 3);
    CHECK_STR(buf, "2,3|4|5,6");
    waiter none[] = { { 1, 2 }, { 2, 3 }, { 3, 0 } };
    cycles_text(none, 3, buf, sizeof buf, &count);
    CHECK(count == 0);
    CHECK_STR(buf, "");
    waiter three[] = { { 30, 10 }, { 10, 20 }, { 20, 30 } };
    cycles_text(three, 3, buf, sizeof buf, &count);
    CHECK(count == 1);
    CHECK_STR(buf, "10,20,30");
    CHECK(find_deadlocks(NULL, 0, NULL) == 0);
}
