/*
 * src/heapgraph/heap_text.c: `hprof heap` on a hand-made HPROF text dump
 * (the JVMPI paper's example: a byte[] held by a C held by a D held by a
 * local of B.g; a static array; an object only a WeakReference holds; a
 * class no CLS record names), read into the graph: sizes as sz= says,
 * paths with the Java frame, the thread's name and the fields, sites; cut
 * at every length and with bytes flipped: an error naming the line, never
 * a crash (ASan/UBSan watch).
 */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>

#include "heapgraph/heap_analysis.h"
#include "heapgraph/heap_text.h"
#include "heapgraph/dominators.h"

static const char PAPER[] =
    "JAVA PROFILE 1.0.1, created Sat Nov 28 02:49:21 2026\n"
    "\n"
    "TRACE           free text that names records\n"
    "HEAP DUMP BEGIN is not one here\n"
    "\n"
    "--------\n"
    "\n"
    "THREAD START (obj=8000000000030d41, id = 200001, name=\"main, the \"first\"\", group=\"main\")\n"
    "TRACE 300001: (thread=200001)\n"
    "\tB.g(B.java:12)\n"
    "\tMain.main(Main.java:Unknown line)\n"
    "TRACE 300002:\n"
    "\tC.<init>(<Unknown Source>)\n"
    "\tB.g(B.java:11)\n"
    "TRACE 300000:\n"
    "\t<empty>\n"
    "HEAP DUMP BEGIN (8 objects, 1240 bytes) Sat Nov 28 02:49:21 2026\n"
    "ROOT 1000 (kind=<thread>, id=200001, trace=300001)\n"
    "ROOT 2000 (kind=<Java stack>, thread=200001, frame=0)\n"
    "ROOT 300 (kind=<system class>, name=Reg)\n"
    "CLS 100 (name=java.lang.Object, trace=300000)\n"
    "CLS 110 (name=java.lang.Thread, trace=300000)\n"
    "\tsuper\t\t100\n"
    "CLS 120 (name=C, trace=300000)\n"
    "\tsuper\t\t100\n"
    "\tloader\t\t1000\n"
    "CLS 130 (name=D, trace=300000)\n"
    "\tsuper\t\t100\n"
    "CLS 140 (name=java.lang.ref.Reference, trace=300000)\n"
    "\tsuper\t\t100\n"
    "CLS 150 (name=java.lang.ref.WeakReference, trace=300000)\n"
    "\tsuper\t\t140\n"
    "CLS 300 (name=Reg, trace=300000)\n"
    "\tsuper\t\t100\n"
    "\tstatic WEAK\t5000\n"
    "\tstatic ARR\t6000\n"
    "OBJ 1000 (sz=120, trace=300000, class=java.lang.Thread@110)\n"
    "OBJ 2000 (sz=16, trace=300001, class=D@130)\n"
    "\tc\t\t3000\n"
    "OBJ 3000 (sz=16, trace=300002, class=C@120)\n"
    "\tdata\t\t4000\n"
    "ARR 4000 (sz=1016, trace=300002, nelems=1000, elem type=byte)\n"
    "OBJ 5000 (sz=32, trace=300000, class=java.lang.ref.WeakReference@150)\n"
    "\treferent\t7000\n"
    "OBJ 7000 (sz=24, trace=300000, class=C@120)\n"
    "ARR 6000 (sz=32, trace=300000, nelems=4, elem type=C[]@160)\n"
    "\t[3]\t\t8000\n"
    "OBJ 8000 (sz=16, trace=300000, class=C@120)\n"
    "HEAP DUMP END\n";

static heap_graph *read_text(const char *text, size_t n, const char *path, unsigned char **bin, char *err,
                             size_t errlen)
{
    unsigned char *copy = malloc(n ? n : 1);    /* exactly sized, for ASan */
    memcpy(copy, text, n);
    heap_graph *g = heap_text_read_memory(copy, n, path, 1u << 20, bin, err, errlen);
    /* the graph keeps pointers into its binary form, not into the text */
    free(copy);
    return g;
}

TEST(heap_text_paper_example)
{
    char err[512] = "";
    unsigned char *bin = NULL;
    heap_graph *g = read_text(PAPER, sizeof PAPER - 1, "paper.txt", &bin, err, sizeof err);
    CHECK(g != NULL);
    if (g == NULL) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    heap_analysis a;
    CHECK(heap_analyze(g, &a, NULL, NULL, err, sizeof err) == 0);
    uint32_t d = heap_graph_node(g, 0x2000), c = heap_graph_node(g, 0x3000), b = heap_graph_node(g, 0x4000);
    uint32_t weak = heap_graph_node(g, 0x7000), arr = heap_graph_node(g, 0x6000), held = heap_graph_node(g, 0x8000);
    CHECK(d != HG_NONE && c != HG_NONE && b != HG_NONE && weak != HG_NONE && arr != HG_NONE);
    /* sizes as sz= gives them */
    CHECK(g->size[d] == 16 && g->size[c] == 16 && g->size[b] == 1016 && g->size[arr] == 32);
    CHECK(a.retained[b] == 1016 && a.retained[c] == 1032 && a.retained[d] == 1048);
    CHECK(a.retained[arr] == 48);
    /* only a WeakReference's referent holds it: garbage */
    CHECK(a.idom[weak] == DOM_UNREACHED && a.idom[held] == arr);
    CHECK_STR(g->classes[g->class_of[b]].name, "byte[]");
    CHECK_STR(g->classes[g->class_of[arr]].name, "C[]");
    CHECK(g->classes[g->class_of[c]].count == 3);
    const char *field;
    int is_static;
    int64_t index;
    char name[64], text[128];
    CHECK(heap_graph_describe_edge(g, d, c, &field, &is_static, &index, name, sizeof name) == 0);
    CHECK(field != NULL && strcmp(field, "c") == 0 && !is_static);
    CHECK(heap_graph_describe_edge(g, arr, held, &field, &is_static, &index, name, sizeof name) == 0);
    CHECK(field == NULL && index == 3);
    CHECK_STR(heap_graph_frame_text(g, 200001, 0, text, sizeof text), "B.g(B.java:12)");
    CHECK_STR(heap_graph_frame_text(g, 200001, 1, text, sizeof text), "Main.main(Main.java)");
    CHECK_STR(heap_graph_thread_name(g, 200001, text, sizeof text), "main, the \"first\"");
    /* the JSON: the byte[]'s path, its site */
    char *json = NULL;
    size_t json_n = 0;
    FILE *out = open_memstream(&json, &json_n);
    CHECK(heap_write_json(&a, 5, NULL, out) == 0);
    fclose(out);
    CHECK(strstr(json, "{\"root\": \"Java frame\", \"thread\": \"main, the \\\"first\\\"\", \"frame\": "
                       "\"B.g(B.java:12)\"}, {\"class\": \"D\", \"field\": \"c\"}, {\"class\": \"C\", "
                       "\"field\": \"data\"}") != NULL);
    CHECK(strstr(json, "\"frames\": [\"C.<init>(Unknown Source)\", \"B.g(B.java:11)\"]") != NULL);
    CHECK(strstr(json, "{\"class\": \"Reg\", \"static\": \"ARR\"}, {\"class\": \"C[]\", \"index\": 3}") != NULL);
    free(json);
    heap_analysis_free(&a);
    heap_graph_free(g);
    free(bin);
}

/* A line spoilt: the error names it. */
static void check_refused(const char *from, const char *to, const char *want)
{
    char text[sizeof PAPER + 64], err[512] = "";
    const char *at = strstr(PAPER, from);
    CHECK(at != NULL);
    if (at == NULL)
        return;
    size_t pre = (size_t)(at - PAPER);
    snprintf(text, sizeof text, "%.*s%s%s", (int)pre, PAPER, to, at + strlen(from));
    unsigned char *bin = NULL;
    heap_graph *g = read_text(text, strlen(text), "bad.txt", &bin, err, sizeof err);
    CHECK(g == NULL);
    if (strstr(err, want) == NULL)
        fprintf(stderr, "got: %s\nwant: %s\n", err, want);
    CHECK(strstr(err, want) != NULL);
    heap_graph_free(g);
    free(bin);
}

TEST(heap_text_errors_name_the_line)
{
    check_refused("OBJ 3000 (sz=16,", "OBJ 3000 (size=16,", "bad.txt: line 40: no sz=N");
    check_refused("\tdata\t\t4000", "\tdata\t\tzz", "bad.txt: line 41: a field whose value is not a hex id");
    check_refused("OBJ 8000", "OBJ 2000", "bad.txt: line 48: object 0x2000 is written twice (also line 38)");
    check_refused("\t[3]\t\t8000", "\t[4]\t\t8000", "bad.txt: line 47: element [4] of an array of 4");
    check_refused("HEAP DUMP END\n", "", "bad.txt: line 17: the heap dump that begins here has no HEAP DUMP END");
    check_refused("CLS 120 (name=C", "CLS 120 (name=C, trace=300000)\n\tsuper\t\t120\nCLS 121 (name=C",
                  "superclasses form a cycle");
    check_refused("--------", "-------", "no line \"--------\" ends the header");
    check_refused("elem type=byte", "elem type=bite", "bad.txt: line 42: no elem type=CLASS@ID or a primitive");
    check_refused("ROOT 300 (kind=<system class>", "ROOT 300 (kind=<sticky>",
                  "bad.txt: line 20: a ROOT of no kind known");
}

TEST(heap_text_truncated_and_corrupt)
{
    size_t n = sizeof PAPER - 1;
    char err[512];
    char *copy = malloc(n);
    /* every cut: refused naming the file (the HEAP DUMP END is gone), but
     * the one of the last newline */
    for (size_t len = 0; len < n; len++) {
        unsigned char *bin = NULL;
        err[0] = '\0';
        heap_graph *g = read_text(PAPER, len, "cut.txt", &bin, err, sizeof err);
        CHECK(g == NULL ? strncmp(err, "cut.txt: ", 9) == 0 : len == n - 1);
        heap_graph_free(g);
        free(bin);
    }
    /* bytes changed one at a time: read or refused, never a crash */
    static const unsigned char to[] = { 0xA5, '\n', '\t', '0', ' ', '@', ')' };
    for (size_t at = 0; at < n; at++)
        for (size_t k = 0; k < sizeof to; k++) {
            memcpy(copy, PAPER, n);
            copy[at] = (char)(k == 0 ? copy[at] ^ 0xA5 : to[k]);
            unsigned char *bin = NULL;
            heap_graph *g = read_text(copy, n, "flip.txt", &bin, err, sizeof err);
            if (g == NULL) {
                CHECK(strncmp(err, "flip.txt: ", 10) == 0);
            } else {
                heap_analysis a;
                if (heap_analyze(g, &a, NULL, NULL, err, sizeof err) == 0) {
                    FILE *devnull = fopen("/dev/null", "w");
                    heap_write_json(&a, 5, NULL, devnull);
                    heap_write_text(&a, 5, NULL, devnull);
                    fclose(devnull);
                    heap_analysis_free(&a);
                }
                heap_graph_free(g);
            }
            free(bin);
        }
    free(copy);
}

TEST(heap_text_bounded_output)
{
    /* an index far past what the text holds: refused, not 16 GB written */
    static const char big[] =
        "JAVA PROFILE 1.0.1, created x\n--------\nHEAP DUMP BEGIN\n"
        "ARR 10 (sz=16, trace=0, nelems=2000000000, elem type=C[]@20)\n\t[1999999999]\t30\nHEAP DUMP END\n";
    char err[512] = "";
    unsigned char *bin = NULL;
    heap_graph *g = read_text(big, sizeof big - 1, "big.txt", &bin, err, sizeof err);
    CHECK(g == NULL && strstr(err, "big.txt: ") == err && strstr(err, "a corrupt length or index?") != NULL);
    free(bin);
    /* a binary file is not a text one */
    CHECK(heap_text_is((const unsigned char *)"JAVA PROFILE 1.0.2\0\0\0\0\x08", 23) == 0);
    CHECK(heap_text_is((const unsigned char *)PAPER, sizeof PAPER - 1) == 1);
}
