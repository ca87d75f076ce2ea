/* flamegraph_writer.c: see flamegraph_writer.h.
 *
 * The page is static HTML (titles, totals, search boxes, canvases, tables),
 * then the data of every section as one JavaScript array, then the drawing
 * code (src/profile/flamegraph.js, embedded at build time with its style
 * sheet flamegraph.css into build/flamegraph_assets.c). Section data: the
 * shown names as JSON strings (plain text in the file, so a method name can
 * be found with grep), and the merged call tree as a compact string of
 * base-32 numbers whose layout flamegraph.js documents. */
#include "flamegraph_writer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flame_tree.h"

/* build/flamegraph_assets.c (scripts/embed-classes). */
extern const unsigned char flamegraph_js[], flamegraph_css[];
extern const unsigned flamegraph_js_len, flamegraph_css_len;

void html_write_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':  fputs("&amp;", out);  break;
        case '<':  fputs("&lt;", out);   break;
        case '>':  fputs("&gt;", out);   break;
        case '"':  fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out);  break;
        default:   fputc(*s, out);
        }
    }
}

/* s as a JavaScript string literal that is safe inside <script>: "</" and
 * "<!" (which could end the script or start an HTML comment in it) have their
 * '<' escaped; "<init>" stays plain text. U+2028 and U+2029 are escaped too:
 * they end a line in older JavaScript. */
static void write_js_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(out, "\\u%04x", *c);
        else if (*c == '<' && (c[1] == '/' || c[1] == '!'))
            fputs("\\u003c", out);
        else if (*c == 0xe2 && c[1] == 0x80 && (c[2] == 0xa8 || c[2] == 0xa9)) {
            fprintf(out, "\\u%04x", c[2] == 0xa8 ? 0x2028 : 0x2029);
            c += 2;
        } else
            fputc(*c, out);
    }
    fputc('"', out);
}

/* 1234567 as "1,234,567". */
static void write_grouped(FILE *out, int64_t v)
{
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%" PRId64, v);
    for (int i = 0; i < n; i++) {
        fputc(digits[i], out);
        if (digits[i] != '-' && i < n - 1 && (n - 1 - i) % 3 == 0)
            fputc(',', out);
    }
}

/* "1,234 samples" (unit "count": the type says what is counted), "5,000 bytes". */
static void write_amount(FILE *out, int64_t v, profile_value_type type)
{
    write_grouped(out, v);
    fputc(' ', out);
    html_write_escaped(out, strcmp(type.unit, "count") == 0 || type.unit[0] == 0 ? type.type : type.unit);
    if (strcmp(type.unit, "count") != 0 && type.type[0]) {
        fputs(" (", out);
        html_write_escaped(out, type.type);
        fputc(')', out);
    }
}

/* ------------------------------------------------------------ the tree as data */

static const char LAST_DIGIT[] = "0123456789abcdefghijklmnopqrstuv";
static const char MORE_DIGIT[] = "wxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";

static void write_number(FILE *out, uint64_t v)
{
    char reversed[16];
    int n = 0;
    reversed[n++] = LAST_DIGIT[v & 31];
    for (v >>= 5; v != 0; v >>= 5)
        reversed[n++] = MORE_DIGIT[v & 31];
    while (n > 0)
        fputc(reversed[--n], out);
}

/* Writes the tree as flamegraph.js reads it: per node, depth first, a head
 * number `code * 4 + flags`, then what the flags do not say. Most of a large
 * tree is chains (a node with one child and the same value), and a method
 * calls few others, so: code k >= 1 names the k-th method the parent's method
 * was already seen calling (code 0: the name index follows); flag 1: the
 * value is what is left of the parent's after the earlier siblings (else it
 * follows); flag 2: exactly one child (else the count follows). A
 * differential section's baseline value always follows. */
typedef struct open_node {
    uint32_t name, children_left;
    int64_t  value_left;
} open_node;

typedef struct tree_writer {
    FILE     *out;
    int       diff;
    uint32_t  nodes;
    idmap     callee_code;       /* (caller name, callee name) -> code */
    uint32_t *ncallees;          /* by caller name */
    open_node path[PROFILE_MAX_DEPTH + 2];
    uint32_t  depth;
} tree_writer;

enum { SAME_VALUE = 1, ONE_CHILD = 2, NFLAGS = 4 };

static int write_node(const flame_tree *t, const flame_node *n, uint32_t nchildren, void *arg)
{
    (void)t;
    tree_writer *w = arg;
    open_node *parent = w->depth ? &w->path[w->depth - 1] : NULL;
    uint64_t code = 0;
    if (parent) {
        uint64_t key = (uint64_t)parent->name << 32 | n->name;
        if ((code = idmap_get(&w->callee_code, key)) == 0 &&
            idmap_put(&w->callee_code, key, ++w->ncallees[parent->name]) != 0)
            return -1;
    }
    int same_value = parent && n->value == parent->value_left;
    write_number(w->out, code * NFLAGS + (same_value ? SAME_VALUE : 0) + (nchildren == 1 ? ONE_CHILD : 0));
    if (code == 0)
        write_number(w->out, n->name);
    if (!same_value)
        write_number(w->out, (uint64_t)n->value);
    if (w->diff)
        write_number(w->out, (uint64_t)(n->base > 0 ? n->base : 0));
    if (nchildren != 1)
        write_number(w->out, nchildren);
    w->nodes++;
    if (parent) {
        parent->value_left -= n->value;
        parent->children_left--;
    }
    if (nchildren > 0)
        w->path[w->depth++] = (open_node){ n->name, nchildren, n->value };
    while (w->depth > 0 && w->path[w->depth - 1].children_left == 0)
        w->depth--;                      /* closed: its last child is written */
    return 0;
}

static int write_tree(FILE *out, const flame_tree *t, int diff, uint32_t *nodes)
{
    tree_writer *w = calloc(1, sizeof *w);
    if (w == NULL || (w->ncallees = calloc(strtab_count(&t->names), sizeof *w->ncallees)) == NULL) {
        free(w);
        return -1;
    }
    w->out = out;
    w->diff = diff;
    int rc = flame_tree_walk(t, write_node, w);
    *nodes = w->nodes;
    idmap_free(&w->callee_code);
    free(w->ncallees);
    free(w);
    return rc;
}

/* names:[...],tree:"...",n:N of one tree. */
static int write_tree_data(FILE *out, const flame_tree *t, int diff)
{
    fputs("names:[", out);
    for (uint32_t i = 0; i < strtab_count(&t->names); i++) {
        if (i)
            fputs(i % 8 ? "," : ",\n", out);
        write_js_string(out, strtab_get(&t->names, i));
    }
    fputs("],\ntree:\"", out);
    uint32_t nodes = 0;
    if (write_tree(out, t, diff, &nodes) != 0)
        return -1;
    fprintf(out, "\",\nn:%" PRIu32, nodes);
    return 0;
}

/* A section's data; by_thread (NULL: none) is the same stacks under a node
 * per thread, for the page's "by thread" view. */
static int write_section_data(FILE *out, const flamegraph_section *s, const flame_tree *t,
                              const flame_tree *by_thread)
{
    profile_value_type type = profile_value(s->profile, s->value_index);
    fputs("{type:", out);
    write_js_string(out, type.type);
    fputs(",unit:", out);
    write_js_string(out, type.unit);
    fprintf(out, ",total:%" PRId64 ",diff:%d,baseTotal:%" PRId64 ",\n", t->nodes[0].value,
            s->baseline != NULL, t->nodes[0].base);
    if (write_tree_data(out, t, s->baseline != NULL) != 0)
        return -1;
    if (by_thread != NULL && by_thread->nodes != NULL) {
        fputs(",\nthreads:{", out);
        if (write_tree_data(out, by_thread, 0) != 0)
            return -1;
        fputs("}", out);
    }
    fputs("}", out);
    return 0;
}

/* ------------------------------------------------------------ the page */

static void write_section_html(FILE *out, const flamegraph_section *s, uint32_t index,
                               const flame_tree *t)
{
    fprintf(out, "<section class=\"fg-section\" id=\"fg-section-%" PRIu32 "\">\n<h2>", index + 1);
    html_write_escaped(out, s->title ? s->title : s->profile ? profile_title(s->profile) : "");
    fputs("</h2>\n", out);
    if (t != NULL) {
        profile_value_type type = profile_value(s->profile, s->value_index);
        fputs("<p class=\"fg-total\">Total: ", out);
        write_amount(out, t->nodes[0].value, type);
        if (s->baseline != NULL) {
            fputs("; baseline: ", out);
            write_amount(out, t->nodes[0].base, type);
            fputs(". Widths are now; red: a larger share of the total than in the baseline, "
                  "blue: a smaller one", out);
        }
        fputs(".</p>\n", out);
        if (s->note_text != NULL) {
            fputs("<p class=\"fg-note\">", out);
            html_write_escaped(out, s->note_text);
            fputs("</p>\n", out);
        }
        fputs("<div class=\"fg-bar\"><input class=\"fg-search\" type=\"search\" "
              "placeholder=\"Search frames\" aria-label=\"Search frames\">"
              "<button class=\"fg-reset\" type=\"button\">Reset zoom</button>"
              "<label><input class=\"fg-invert\" type=\"checkbox\"> Inverted (callers of the hottest "
              "frames)</label>"
              "<label class=\"fg-thread-choice\"><input class=\"fg-by-thread\" type=\"checkbox\"> By thread</label>"
              "<span class=\"fg-match\"></span></div>\n"
              "<div class=\"fg-graph\"><canvas></canvas></div>\n", out);
    }
    if (s->table_html != NULL)
        fprintf(out, "<div class=\"fg-table\">%s</div>\n", s->table_html);
    fputs("</section>\n", out);
}

static void write_head(FILE *out, const char *page_title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"generator\" content=\"hprof\">\n<title>", out);
    html_write_escaped(out, page_title);
    fputs("</title>\n<style>\n", out);
    fwrite(flamegraph_css, 1, flamegraph_css_len, out);
    /* Script errors, even one that stops the drawing code, are shown on the page. */
    fputs("</style>\n<script>\nwindow.addEventListener('error', function (e) {\n"
          "  var el = document.getElementById('fg-errors');\n"
          "  if (el) el.textContent += 'script error: ' + e.message + ' (line ' + e.lineno + ')\\n';\n"
          "});\n</script>\n</head>\n<body>\n<h1>", out);
    html_write_escaped(out, page_title);
    fputs("</h1>\n<p class=\"fg-help\">Click a frame to zoom in, a frame above it or Reset to zoom "
          "out; hover for counts and percentages; search highlights the frames whose name "
          "contains the text.</p>\n", out);
}

static void free_trees(flame_tree *trees, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        flame_tree_free(&trees[i]);
    free(trees);
}

/* One tree per section with a profile (empty for the others); with
 * by_thread, the by-thread tree of each section that is not differential
 * and whose samples name two threads or more (empty for the others). */
static flame_tree *build_trees(const flamegraph_section *sections, uint32_t n, int by_thread)
{
    flame_tree *trees = calloc(n ? n : 1, sizeof *trees);
    for (uint32_t i = 0; trees != NULL && i < n; i++) {
        const flamegraph_section *s = &sections[i];
        if (s->profile == NULL || (by_thread && (s->baseline != NULL || flame_profile_threads(s->profile) < 2)))
            continue;
        int ok = flame_tree_init(&trees[i]) == 0;
        trees[i].by_thread = by_thread;
        /* A differential graph compares two runs: their lambdas match by
         * name only without the hidden classes' addresses. */
        trees[i].drop_addresses = s->baseline != NULL;
        if (!ok || flame_tree_add(&trees[i], s->profile, s->value_index, 0) != 0 ||
            (s->baseline && flame_tree_add(&trees[i], s->baseline, s->value_index, 1) != 0)) {
            free_trees(trees, n);
            return NULL;
        }
    }
    return trees;
}

int flamegraph_write_page(FILE *out, const char *page_title, const flamegraph_section *sections,
                          uint32_t nsections)
{
    flame_tree *trees = build_trees(sections, nsections, 0);
    flame_tree *thread_trees = trees ? build_trees(sections, nsections, 1) : NULL;
    if (thread_trees == NULL) {
        if (trees)
            free_trees(trees, nsections);
        return -1;
    }
    write_head(out, page_title ? page_title : "hprof");
    for (uint32_t i = 0; i < nsections; i++)
        write_section_html(out, &sections[i], i, sections[i].profile ? &trees[i] : NULL);
    fputs("<div id=\"fg-tip\" class=\"fg-tip\" hidden></div>\n<pre id=\"fg-errors\"></pre>\n"
          "<p id=\"fg-status\" data-state=\"loading\"></p>\n<script>\nvar HPROF_FLAME_DATA = [\n", out);
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < nsections; i++) {
        if (i)
            fputs(",\n", out);
        if (sections[i].profile)
            rc = write_section_data(out, &sections[i], &trees[i], &thread_trees[i]);
        else
            fputs("null", out);
    }
    fputs("];\n</script>\n<script>\n", out);
    fwrite(flamegraph_js, 1, flamegraph_js_len, out);
    fputs("</script>\n</body>\n</html>\n", out);
    free_trees(trees, nsections);
    free_trees(thread_trees, nsections);
    return rc != 0 || fflush(out) != 0 || ferror(out) ? -1 : 0;
}
