/*
 * src/heapgraph: dominators on hand-made graphs (the Lengauer-Tarjan paper's
 * example, unreachable and excluded nodes, a chain a million deep), and the
 * reader on a hand-made HPROF heap dump (the JVMPI paper's example: a
 * byte[] held by a C held by a D held by a local of B.g), cut at every
 * length and with bytes flipped: an error naming the offset, never a crash.
 */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>

#include "heapgraph/dominators.h"
#include "heapgraph/heap_analysis.h"
#include "heapgraph/heap_suspects.h"
#include "heapgraph/heap_graph.h"

/* successor lists, terminated by -1, into CSR */
static void csr(uint32_t n, const int *const *succ, uint32_t *start, uint32_t *edges)
{
    uint32_t e = 0;
    for (uint32_t v = 0; v < n; v++) {
        start[v] = e;
        for (const int *s = succ[v]; *s >= 0; s++)
            edges[e++] = (uint32_t)*s;
    }
    start[n] = e;
}

TEST(dominators_lengauer_tarjan_example)
{
    /* R=0 A=1 B=2 C=3 D=4 E=5 F=6 G=7 H=8 I=9 J=10 K=11 L=12 */
    static const int r[] = { 1, 2, 3, -1 }, a[] = { 4, -1 }, b[] = { 1, 4, 5, -1 }, c[] = { 6, 7, -1 },
                     d[] = { 12, -1 }, e[] = { 8, -1 }, f[] = { 9, -1 }, g[] = { 9, 10, -1 },
                     h[] = { 5, 11, -1 }, i[] = { 11, -1 }, j[] = { 9, -1 }, k[] = { 9, 0, -1 },
                     l[] = { 8, -1 };
    const int *const succ[] = { r, a, b, c, d, e, f, g, h, i, j, k, l };
    uint32_t start[14], edges_a[32], *edges = edges_a, idom[13], order[13], norder;
    csr(13, succ, start, edges);
    CHECK(dominators_compute(13, start, &edges, 0, NULL, idom, order, &norder) == 0);
    static const uint32_t want[] = { 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 7, 0, 4 };
    for (int v = 0; v < 13; v++)
        CHECK(idom[v] == want[v]);
    CHECK(norder == 13 && order[0] == 0);
}

TEST(dominators_unreachable_and_excluded)
{
    /* 0 -> 1 -> 2, 0 -> 3 -> 2; 4 -> 2 unreachable; excluding 3 makes 1 dominate 2 */
    static const int s0[] = { 1, 3, -1 }, s1[] = { 2, -1 }, s2[] = { -1 }, s3[] = { 2, -1 }, s4[] = { 2, -1 };
    const int *const succ[] = { s0, s1, s2, s3, s4 };
    uint32_t start[6], edges_a[8], *edges = edges_a, idom[5], norder;
    csr(5, succ, start, edges);
    CHECK(dominators_compute(5, start, &edges, 0, NULL, idom, NULL, &norder) == 0);
    CHECK(idom[2] == 0 && idom[1] == 0 && idom[3] == 0 && idom[4] == DOM_UNREACHED && norder == 4);
    uint32_t reach[5] = { 0, 0, 0, DOM_UNREACHED, 0 };
    CHECK(dominators_compute(5, start, &edges, 0, reach, idom, NULL, &norder) == 0);
    CHECK(idom[2] == 1 && idom[3] == DOM_UNREACHED && norder == 3);
}

TEST(dominators_million_deep_chain)
{
    /* 0 -> 1 -> ... -> n-1, and n-1 -> 1 (a cycle): no recursion, so no stack overflow */
    uint32_t n = 1000000;
    uint32_t *start = malloc((n + 1) * sizeof *start), *edges = malloc(n * sizeof *edges);
    uint32_t *idom = malloc(n * sizeof *idom);
    for (uint32_t v = 0; v < n; v++) {
        start[v] = v;
        edges[v] = v + 1 < n ? v + 1 : 1;
    }
    start[n] = n;
    uint32_t norder;
    CHECK(dominators_compute(n, start, &edges, 1, NULL, idom, NULL, &norder) == 0);
    CHECK(edges == NULL);
    int bad = 0;
    for (uint32_t v = 1; v < n; v++)
        bad += idom[v] != v - 1;
    CHECK(bad == 0 && norder == n);
    free(start);
    free(idom);
}

/* ---- a hand-made dump */

typedef struct dump {
    unsigned char b[4096];
    size_t        n, rec;
} dump;

static void put(dump *d, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        d->b[d->n++] = (unsigned char)(v >> (8 * i));
}

static void record(dump *d, unsigned tag)
{
    put(d, tag, 1);
    put(d, 0, 4);
    d->rec = d->n;
    put(d, 0, 4);
}

static void end_record(dump *d)
{
    size_t len = d->n - d->rec - 4;
    for (int i = 0; i < 4; i++)
        d->b[d->rec + (size_t)i] = (unsigned char)(len >> (8 * (3 - i)));
}

static void utf8(dump *d, uint64_t id, const char *s)
{
    record(d, 0x01);
    put(d, id, 8);
    for (const char *p = s; *p; p++)
        put(d, (unsigned char)*p, 1);
    end_record(d);
}

static void load_class(dump *d, uint32_t serial, uint64_t id, uint64_t name)
{
    record(d, 0x02);
    put(d, serial, 4);
    put(d, id, 8);
    put(d, 0, 4);
    put(d, name, 8);
    end_record(d);
}

/* a CLASS DUMP with one field (or none) of type 2 named field_name */
static void class_dump(dump *d, uint64_t id, uint64_t super, uint64_t field_name)
{
    put(d, 0x20, 1);
    put(d, id, 8);
    put(d, 0, 4);
    put(d, super, 8);
    for (int i = 0; i < 5; i++)
        put(d, 0, 8);
    put(d, 0, 4);       /* instance size: HotSpot's 0 for java.lang.Object */
    put(d, 0, 2);       /* constant pool */
    put(d, 0, 2);       /* statics */
    put(d, field_name ? 1 : 0, 2);
    if (field_name) {
        put(d, field_name, 8);
        put(d, 2, 1);
    }
}

static void instance(dump *d, uint64_t id, uint64_t class_id, uint64_t ref)
{
    put(d, 0x21, 1);
    put(d, id, 8);
    put(d, 0, 4);
    put(d, class_id, 8);
    put(d, 8, 4);
    put(d, ref, 8);
}

/* Object=0x100, B=0x110, C=0x120, D=0x130, byte[] class 0x140; D 0x1000 ->
 * C 0x2000 -> byte[100] 0x3000; D is a local of B.g, depth 0 of thread 1's
 * trace 7; an unreachable C 0x4000 holds nothing. */
static void paper_dump(dump *d)
{
    d->n = 0;
    const char magic[] = "JAVA PROFILE 1.0.2";
    memcpy(d->b, magic, sizeof magic);
    d->n = sizeof magic;
    put(d, 8, 4);
    put(d, 0, 8);
    utf8(d, 1, "java/lang/Object");
    utf8(d, 2, "B");
    utf8(d, 3, "C");
    utf8(d, 4, "D");
    utf8(d, 5, "[B");
    utf8(d, 6, "data");
    utf8(d, 7, "c");
    utf8(d, 8, "g");
    utf8(d, 9, "()V");
    utf8(d, 10, "B.java");
    load_class(d, 1, 0x100, 1);
    load_class(d, 2, 0x110, 2);
    load_class(d, 3, 0x120, 3);
    load_class(d, 4, 0x130, 4);
    load_class(d, 5, 0x140, 5);
    record(d, 0x04);            /* frame 0x50: B.g()V (B.java:42) */
    put(d, 0x50, 8);
    put(d, 8, 8);
    put(d, 9, 8);
    put(d, 10, 8);
    put(d, 2, 4);
    put(d, 42, 4);
    end_record(d);
    record(d, 0x05);            /* trace 7 of thread 1 */
    put(d, 7, 4);
    put(d, 1, 4);
    put(d, 1, 4);
    put(d, 0x50, 8);
    end_record(d);
    record(d, 0x1C);
    put(d, 0x03, 1);            /* ROOT JAVA FRAME: D, thread 1, depth 0 */
    put(d, 0x1000, 8);
    put(d, 1, 4);
    put(d, 0, 4);
    put(d, 0x08, 1);            /* ROOT THREAD OBJECT: none dumped, thread 1, trace 7 */
    put(d, 0x9000, 8);
    put(d, 1, 4);
    put(d, 7, 4);
    class_dump(d, 0x100, 0, 0);
    class_dump(d, 0x110, 0x100, 0);
    class_dump(d, 0x120, 0x100, 6);
    class_dump(d, 0x130, 0x100, 7);
    class_dump(d, 0x140, 0x100, 0);
    instance(d, 0x1000, 0x130, 0x2000);
    instance(d, 0x2000, 0x120, 0x3000);
    instance(d, 0x4000, 0x120, 0);
    put(d, 0x23, 1);            /* byte[100] */
    put(d, 0x3000, 8);
    put(d, 0, 4);
    put(d, 100, 4);
    put(d, 8, 1);
    for (int i = 0; i < 100; i++)
        put(d, (unsigned)i, 1);
    end_record(d);
    record(d, 0x2C);
    end_record(d);
}

/* The paper's dump read into a graph and analysed, or NULL (said on stderr). */
static heap_graph *paper_analysed(heap_analysis *a)
{
    static dump d;
    paper_dump(&d);
    char err[512];
    heap_graph *g = heap_graph_read(d.b, d.n, "paper.hprof", NULL, NULL, err, sizeof err);
    if (g != NULL && heap_analyze(g, a, NULL, NULL, err, sizeof err) != 0) {
        heap_analysis_free(a);
        heap_graph_free(g);
        g = NULL;
    }
    if (g == NULL)
        fprintf(stderr, "%s\n", err);
    return g;
}

TEST(heapgraph_paper_example)
{
    heap_analysis a;
    heap_graph *g = paper_analysed(&a);
    CHECK(g != NULL);
    if (g == NULL)
        return;
    uint32_t dn = heap_graph_node(g, 0x1000), cn = heap_graph_node(g, 0x2000), bn = heap_graph_node(g, 0x3000);
    uint32_t garbage = heap_graph_node(g, 0x4000);
    /* sizes as VisualVM counts them without compressed oops: header 16 */
    CHECK(g->size[dn] == 24 && g->size[cn] == 24 && g->size[bn] == 120);
    CHECK(a.retained[bn] == 120 && a.retained[cn] == 144 && a.retained[dn] == 168);
    CHECK(a.idom[garbage] == DOM_UNREACHED && a.idom[dn] == 0 && a.idom[cn] == dn);
    const hg_class *c = &g->classes[g->class_of[cn]];
    CHECK_STR(c->name, "C");
    CHECK(c->count == 2 && c->retained == 144);     /* the garbage C counts, retains nothing */
    CHECK_STR(g->classes[g->class_of[bn]].name, "byte[]");
    const char *field;
    int is_static;
    int64_t index;
    char name[64], frame[128];
    CHECK(heap_graph_describe_edge(g, dn, cn, &field, &is_static, &index, name, sizeof name) == 0);
    CHECK(field != NULL && strcmp(field, "c") == 0 && !is_static && index < 0);
    CHECK(heap_graph_describe_edge(g, cn, bn, &field, &is_static, &index, name, sizeof name) == 0);
    CHECK_STR(field, "data");
    CHECK_STR(heap_graph_frame_text(g, 1, 0, frame, sizeof frame), "B.g(B.java:42)");
    uint32_t top[4];
    uint32_t n = heap_top_objects(&a, 4, top);
    CHECK(n >= 1 && top[0] == bn);  /* D and C only pass their retained set on */
    CHECK(a.path_parent[bn] == cn && a.path_parent[cn] == dn && a.path_parent[dn] == 0);
    heap_analysis_free(&a);
    heap_graph_free(g);
}

TEST(heapgraph_truncated_and_corrupt)
{
    static dump d;
    paper_dump(&d);
    char err[512];
    /* every cut: refused with the file's name, or read (a cut between records) */
    for (size_t len = 0; len < d.n; len++) {
        unsigned char *copy = malloc(len ? len : 1);
        memcpy(copy, d.b, len);
        err[0] = '\0';
        heap_graph *g = heap_graph_read(copy, len, "cut.hprof", NULL, NULL, err, sizeof err);
        if (g == NULL) {
            CHECK(strncmp(err, "cut.hprof: ", 11) == 0);
        } else {
            heap_analysis a;
            if (heap_analyze(g, &a, NULL, NULL, err, sizeof err) == 0)
                heap_analysis_free(&a);
            heap_graph_free(g);
        }
        free(copy);
    }
    /* bytes flipped one at a time: never a crash (ASan watches) */
    for (size_t at = 0; at < d.n; at++) {
        unsigned char saved = d.b[at];
        d.b[at] ^= 0xA5;
        heap_graph *g = heap_graph_read(d.b, d.n, "flip.hprof", NULL, NULL, err, sizeof err);
        if (g != NULL) {
            heap_analysis a;
            if (heap_analyze(g, &a, NULL, NULL, err, sizeof err) == 0) {
                FILE *devnull = fopen("/dev/null", "w");
                heap_write_json(&a, 5, NULL, devnull);
                heap_write_text(&a, 5, NULL, devnull);
                heap_write_html(&a, devnull);
                fclose(devnull);
                heap_analysis_free(&a);
            }
            heap_graph_free(g);
        }
        d.b[at] = saved;
    }
}

/* The paper's byte[] is the leak suspect (D and C hold it, and only it), in
 * the text report, the JSON and the page; the page's tree has D, C and the
 * byte[] in a row; a dump compared with itself grew by nothing. */
TEST(heapgraph_suspects_and_page)
{
    heap_analysis a;
    heap_graph *g = paper_analysed(&a);
    CHECK(g != NULL);
    if (g == NULL)
        return;
    uint32_t dn = heap_graph_node(g, 0x1000), bn = heap_graph_node(g, 0x3000);
    heap_domtree t;
    heap_suspects s;
    CHECK(heap_domtree_make(&a, &t) == 0);
    CHECK(heap_domtree_count(&t, dn) >= 1 && t.child[t.start[dn]] == heap_graph_node(g, 0x2000));   /* largest first */
    CHECK(heap_find_suspects(&a, &t, &s) == 0);
    CHECK(s.n >= 1 && !s.list[0].is_class && s.list[0].node == bn && s.list[0].klass == HG_NONE);
    for (uint32_t i = 1; i < s.n; i++)     /* the class objects may be big in so small a dump; D and C are not named */
        CHECK(s.list[i].node != dn && s.list[i].node != heap_graph_node(g, 0x2000));
    heap_suspects_free(&s);
    heap_domtree_free(&t);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    heap_baseline self;
    CHECK(heap_baseline_of(&a, &self) == 0 && !self.has_sites);
    CHECK(heap_write_json(&a, 5, &self, out) == 0);
    fflush(out);
    CHECK(strstr(text, "\"suspects\": [\n  {\"kind\": \"object\", \"id\": \"0x3000\", \"class\": \"byte[]\", "
                       "\"retained\": 120") != NULL);
    CHECK(strstr(text, "\"path\": [{\"root\": \"Java frame\", \"frame\": \"B.g(B.java:42)\"}, "
                       "{\"class\": \"D\", \"field\": \"c\"}, {\"class\": \"C\", \"field\": \"data\"}]") != NULL);
    CHECK(strstr(text, "\"growth\": []") != NULL && strstr(text, "site_growth") == NULL);
    rewind(out);
    CHECK(heap_write_text(&a, 5, NULL, out) == 0);
    fflush(out);
    CHECK(strstr(text, "  1. One byte[], 0x3000, retains 120 bytes (") != NULL);
    rewind(out);
    CHECK(heap_write_html(&a, out) == 0);
    fflush(out);
    CHECK(strstr(text, "<!DOCTYPE html>") == text && strstr(text, "</html>") != NULL);
    /* D, then C as its first child row, then the byte[] */
    char *dr = strstr(text, "[\"D\", \"0x1000\", 24, 168, ");
    char *cr = dr ? strstr(dr, "[\"C\", \"0x2000\", 24, 144, ") : NULL;
    CHECK(dr != NULL && cr != NULL && strstr(cr, "[\"byte[]\", \"0x3000\", 120, 120, -1, 0, 0, 0, 0]") != NULL);
    CHECK(strstr(text, "\"sentence\": \"One byte[], 0x3000, retains 120 bytes") != NULL);
    fclose(out);
    free(text);
    heap_baseline_free(&self);
    heap_analysis_free(&a);
    heap_graph_free(g);
}

TEST(heapgraph_reads_the_last_of_two_dumps)
{
    static dump d;
    paper_dump(&d);
    /* a second dump: java.lang.Object, D and one D holding nothing */
    record(&d, 0x1C);
    put(&d, 0x05, 1);               /* ROOT STICKY CLASS */
    put(&d, 0x130, 8);
    class_dump(&d, 0x100, 0, 0);
    class_dump(&d, 0x130, 0x100, 7);
    instance(&d, 0x7000, 0x130, 0);
    end_record(&d);
    record(&d, 0x2C);
    end_record(&d);
    char err[512];
    heap_graph *g = heap_graph_read(d.b, d.n, "two.hprof", NULL, NULL, err, sizeof err);
    CHECK(g != NULL);
    if (g == NULL)
        return;
    CHECK(g->heap_dumps == 2 && g->nnodes == 4);
    CHECK(heap_graph_node(g, 0x7000) != HG_NONE && heap_graph_node(g, 0x1000) == HG_NONE);
    heap_graph_free(g);
}
