/* Unit tests: the flame graph page (src/profile/flamegraph_writer.c): escaping,
 * and the embedded tree read back by a decoder written from the format's
 * description in flamegraph.js. */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>

#include "profile/flamegraph_writer.h"

static char *page_of(const flamegraph_section *sections, uint32_t n)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc = flamegraph_write_page(f, "Page <1>", sections, n);
    fclose(f);
    if (rc != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static int occurrences(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
        n++;
    return n;
}

static profile *small_profile(int64_t get_samples)
{
    profile_value_type type = { "samples", "count" };
    profile *p = profile_new("CPU samples", &type, 1);
    uint32_t main_ = profile_frame_id(p, "Demo", "main", "", "Demo.java", 1);
    uint32_t run = profile_frame_id(p, "Demo", "run", "", "Demo.java", 2);
    uint32_t get = profile_frame_id(p, "java.util.HashMap", "get", "", "HashMap.java", 3);
    uint32_t get2 = profile_frame_id(p, "java.util.HashMap", "get", "", "HashMap.java", 4);
    uint32_t init = profile_frame_id(p, "Demo", "<init>", "", "Demo.java", 5);
    uint32_t lambda = profile_frame_id(p, "Demo", "lambda$0", "", "Demo.java", 6);
    profile_add(p, (uint32_t[]){ get, run, main_ }, 3, "a", &get_samples);
    profile_add(p, (uint32_t[]){ get2, run, main_ }, 3, "b", (const int64_t[]){ 2 });
    profile_add(p, (uint32_t[]){ init, run, main_ }, 3, "a", (const int64_t[]){ 4 });
    profile_add(p, (uint32_t[]){ lambda, main_ }, 2, "a", (const int64_t[]){ 1 });
    return p;
}

TEST(html_escapes_markup)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    html_write_escaped(f, "a<b>&\"c'");
    fclose(f);
    CHECK_STR(text, "a&lt;b&gt;&amp;&quot;c&#39;");
    free(text);
}

TEST(flamegraph_page_keeps_names_plain_and_scripts_closed)
{
    profile *p = small_profile(3);
    profile_value_type type = { "samples", "count" };
    profile *odd = profile_new("odd", &type, 1);
    uint32_t evil = profile_frame_id(odd, "Evil</script><!--x", "m\xe2\x80\xa8", "", "", 1);
    profile_add(odd, &evil, 1, NULL, (const int64_t[]){ 1 });
    flamegraph_section sections[3] = {
        { "CPU <samples>", p, 0, NULL, "<table id=\"t1\"></table>", "Stacks stop at 4 <frames>" },
        { NULL, odd, 0, NULL, NULL, NULL },
        { "Only a table", NULL, 0, NULL, "<p id=\"t3\">x</p>", NULL },
    };
    char *page = page_of(sections, 3);
    CHECK(page != NULL);
    if (page != NULL) {
        CHECK(strstr(page, "\"Demo.<init>\"") != NULL);            /* plain text, not \u003c */
        CHECK(strstr(page, "\"Demo.lambda$0\"") != NULL);
        CHECK(strstr(page, "<title>Page &lt;1&gt;</title>") != NULL);
        CHECK(strstr(page, "<h2>CPU &lt;samples&gt;</h2>") != NULL);
        CHECK(strstr(page, "<h2>odd</h2>") != NULL);               /* untitled: the profile's title */
        CHECK(strstr(page, "Total: 10 samples.") != NULL);
        CHECK(strstr(page, "<table id=\"t1\"></table>") != NULL && strstr(page, "<p id=\"t3\">x</p>") != NULL);
        /* The note goes above its graph, escaped; sections without one have none. */
        CHECK(strstr(page, "<p class=\"fg-note\">Stacks stop at 4 &lt;frames&gt;</p>\n<div class=\"fg-bar\">") != NULL);
        CHECK(occurrences(page, "class=\"fg-note\"") == 1);
        /* Three scripts (error catcher, data, drawing code): no name closes one early. */
        CHECK(occurrences(page, "</script>") == 3 && occurrences(page, "<!--") == 0);
        CHECK(strstr(page, "Evil\\u003c/script>\\u003c!--x.m\\u2028") != NULL);
        CHECK(strstr(page, "\xe2\x80\xa8") == NULL);
        CHECK(strstr(page, "null];") != NULL);                      /* the table-only section */
    }
    free(page);
    profile_free(p);
    profile_free(odd);
}

/* ------------------------------------------------------------ reading the tree back */

typedef struct node {
    char    name[64];
    int64_t value, base;
    int     children;
} node;

/* The index-th JSON string of the names array (names without escapes). */
static void name_at(const char *names, uint64_t index, char *out, size_t size)
{
    const char *open = names;
    for (uint64_t i = 0; open != NULL && i <= index; i++) {
        open = strchr(open, '"');
        const char *close = open ? strchr(open + 1, '"') : NULL;
        if (i == index && close) {
            snprintf(out, size, "%.*s", (int)(close - open - 1), open + 1);
            return;
        }
        open = close ? close + 1 : NULL;
    }
    snprintf(out, size, "(no name %llu)", (unsigned long long)index);
}

static int digit_of(char c, int *more)
{
    const char *last = "0123456789abcdefghijklmnopqrstuv", *cont = "wxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
    const char *at;
    if (c && (at = strchr(last, c)) != NULL) {
        *more = 0;
        return (int)(at - last);
    }
    if (c && (at = strchr(cont, c)) != NULL) {
        *more = 1;
        return (int)(at - cont);
    }
    return -1;
}

static uint64_t next_number(const char **p)
{
    uint64_t v = 0;
    int more = 1;
    while (more) {
        int d = digit_of(*(*p)++, &more);
        if (d < 0)
            return UINT64_MAX;
        v = v * 32 + (uint64_t)d;
    }
    return v;
}

/* Decode a section's tree (the first one at or after `from`) into nodes, depth first. */
static int read_tree(const char *from, int diff, node *nodes, int max)
{
    const char *names = strstr(from, "names:["), *p = strstr(from, "tree:\"");
    if (names == NULL || p == NULL)
        return -1;
    p += 6;
    uint64_t path_name[64], callees[64][8] = { { 0 } };
    int64_t path_left[64];
    int path_kids[64], ncallees[64] = { 0 }, depth = 0, n = 0;
    while (*p != '"' && n < max) {
        uint64_t head = next_number(&p), code = head / 4, name;
        node *nd = &nodes[n++];
        if (code == 0)
            name = next_number(&p);
        else
            name = callees[path_name[depth - 1]][code - 1];
        if (code == 0 && depth > 0)
            callees[path_name[depth - 1]][ncallees[path_name[depth - 1]]++] = name;
        name_at(names + 6, name, nd->name, sizeof nd->name);
        nd->value = head & 1 ? path_left[depth - 1] : (int64_t)next_number(&p);
        nd->base = diff ? (int64_t)next_number(&p) : 0;
        nd->children = head & 2 ? 1 : (int)next_number(&p);
        if (depth > 0) {
            path_left[depth - 1] -= nd->value;
            path_kids[depth - 1]--;
        }
        if (nd->children > 0) {
            path_name[depth] = name;
            path_left[depth] = nd->value;
            path_kids[depth++] = nd->children;
        }
        while (depth > 0 && path_kids[depth - 1] == 0)
            depth--;
    }
    return n;
}

static int node_is(const node *n, const char *name, int64_t value, int64_t base, int children)
{
    return strcmp(n->name, name) == 0 && n->value == value && n->base == base && n->children == children;
}

/* The page of one section (malloc'ed in *page) and its tree in nodes: 6
 * nodes for small_profile, else 0. */
static int six_node_page(const profile *p, const profile *baseline, node *nodes, char **page)
{
    flamegraph_section section = { "CPU", p, 0, baseline, NULL, NULL };
    *page = page_of(&section, 1);
    return *page != NULL && read_tree(*page, baseline != NULL, nodes, 16) == 6;
}

TEST(flamegraph_tree_merges_threads_and_lines_in_name_order)
{
    profile *p = small_profile(3);
    node nodes[16];
    char *page;
    CHECK(six_node_page(p, NULL, nodes, &page));
    if (page != NULL) {
        CHECK(node_is(&nodes[0], "all", 10, 0, 1));
        CHECK(node_is(&nodes[1], "Demo.main", 10, 0, 2));
        CHECK(node_is(&nodes[2], "Demo.lambda$0", 1, 0, 0));     /* children in name order */
        CHECK(node_is(&nodes[3], "Demo.run", 9, 0, 2));
        CHECK(node_is(&nodes[4], "Demo.<init>", 4, 0, 0));
        CHECK(node_is(&nodes[5], "java.util.HashMap.get", 5, 0, 0));   /* two lines, two threads */
        CHECK(strstr(page, "diff:0") != NULL && strstr(page, "n:6,\nthreads:{") != NULL);
        /* The by-thread view: the same stacks under a node per thread. */
        CHECK(strstr(page, "\"[thread] a\"") != NULL && strstr(page, "\"[thread] b\"") != NULL);
    }
    free(page);
    profile_free(p);
}

TEST(flamegraph_differential_carries_the_baseline)
{
    profile *now = small_profile(3), *before = small_profile(13);
    node nodes[16];
    char *page;
    CHECK(six_node_page(now, before, nodes, &page));
    if (page != NULL) {
        CHECK(node_is(&nodes[0], "all", 10, 20, 1));
        CHECK(node_is(&nodes[3], "Demo.run", 9, 19, 2));
        CHECK(node_is(&nodes[5], "java.util.HashMap.get", 5, 15, 0));
        CHECK(strstr(page, "diff:1,baseTotal:20") != NULL && strstr(page, "baseline: 20 samples") != NULL);
        CHECK(strstr(page, "threads:{") == NULL);                  /* no by-thread view of a diff */
    }
    free(page);
    profile_free(now);
    profile_free(before);
}

TEST(flamegraph_reports_write_errors)
{
    profile *p = small_profile(3);
    flamegraph_section section = { "CPU", p, 0, NULL, NULL, NULL };
    FILE *full = fopen("/dev/full", "w");
    if (full != NULL) {
        CHECK(flamegraph_write_page(full, "x", &section, 1) == -1);
        fclose(full);
    }
    profile_free(p);
}
