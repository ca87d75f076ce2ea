/*
 * coverage_agent: a coverage tool as JCov (the JVMPI one) is, written to the
 * JVMPI specification alone: the same events, enabled in JVM_OnLoad all or
 * nothing (CLASS_LOAD, CLASS_LOAD_HOOK, CLASS_UNLOAD, OBJECT_MOVE, GC_START,
 * GC_FINISH, THREAD_START/END, METHOD_ENTRY, DATA_DUMP_REQUEST, JVM_SHUT_DOWN,
 * INSTRUCTION_START), the same calls (thread-local storage set at
 * THREAD_START, its tables locked from GC_START to GC_FINISH). It reads each
 * class of interest from CLASS_LOAD_HOOK's bytes (copied into the new bytes
 * through malloc_f, as JCov does): its methods' byte codes and line tables,
 * which are all it knows of the code, as JCov knows the class file's
 * CharacterRangeTable. CLASS_LOAD gives the methods' ids; METHOD_ENTRY counts
 * calls; INSTRUCTION_START's offset must be an instruction of that code,
 * where it counts the lines run and the branches' ways (is_true; the
 * switches' keys and pair indexes, lookupswitch's pairs_total against the
 * code's own count). At JVM_SHUT_DOWN, to out=FILE, per method of the classes
 * whose names start with class=NAME, in CLASS_LOAD order:
 *   method CLASS.NAME+DESC entries N run L,L,... missed L,...
 *   branch CLASS.NAME LINE EVALUATED/TAKEN          (each if, in code order)
 *   switch CLASS.NAME LINE K:N,K:N,...,default:N    (tableswitch keys or
 *                                                   lookupswitch pair indexes)
 *   bad N            (events at offsets that are no instruction of the
 *                    class file's code, or a pairs_total that is not its)
 *   unpaired N       (if not 0: CLASS_LOADs of classes of interest on a thread that
 *                    had not seen their CLASS_LOAD_HOOK: as JCov, which
 *                    keeps the hook's record in the thread's storage, it
 *                    does not profile them)
 * Options: out=FILE,class=NAME[,alloc] (alloc: OBJECT_ALLOC enabled too,
 * whose calls the layer inserts after every array allocation).
 */
#include <jvmpi.h>

#include "agent_support.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_METHODS 64
#define MAX_CLASSES 16

typedef struct method {
    char      *cls, *name, *desc;
    jmethodID  id;
    uint8_t   *code;
    uint32_t   code_len;
    uint8_t   *starts;              /* 1 where an instruction starts */
    uint16_t  *line_of;             /* each offset's source line */
    uint8_t   *line_start;          /* 1 where a LineNumberTable entry starts */
    long       entries;
    long      *ran;                 /* per offset */
    long      *taken;               /* per offset: if taken / switch choice counts (below) */
    long      *ways;                /* per offset * 64: a switch's ways, the last the default */
} method;

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static FILE *out;
static char prefix[256];
static method methods[MAX_METHODS];
static int n_methods;
static long bad;

/* ------------------------------------------------------------ the class file */

typedef struct { const uint8_t *p, *end; int bad; } reader;
static unsigned u1(reader *r) { if (r->p + 1 > r->end) { r->bad = 1; return 0; } return *r->p++; }
static unsigned u2(reader *r) { unsigned a = u1(r); return a << 8 | u1(r); }
static uint32_t u4(reader *r) { uint32_t a = u2(r); return a << 16 | u2(r); }
static void skip(reader *r, uint32_t n) { if ((size_t)(r->end - r->p) < n) { r->bad = 1; r->p = r->end; } else r->p += n; }
static int32_t s4at(const uint8_t *p) { return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]); }

/* An instruction's length, or -1 (the specification's opcodes 0..201). */
static int op_length(const uint8_t *code, uint32_t at, uint32_t len) {
    unsigned op = code[at];
    if (op == 0xaa || op == 0xab) {                      /* tableswitch, lookupswitch */
        uint32_t p = (at + 4) & ~3u;
        if (p + 12 > len) return -1;
        int64_t n = op == 0xaa ? (int64_t)s4at(code + p + 8) - s4at(code + p + 4) + 1 : s4at(code + p + 4);
        if (n < 0 || n > 65535) return -1;
        return (int)(p - at + (op == 0xaa ? 12 + 4 * n : 8 + 8 * n));
    }
    if (op == 0xc4) return at + 1 < len && code[at + 1] == 0x84 ? 6 : 4;     /* wide (iinc) */
    if (op == 16 || op == 18 || (op >= 21 && op <= 25) || (op >= 54 && op <= 58) || op == 169 || op == 188)
        return 2;
    if (op == 17 || op == 19 || op == 20 || op == 132 || (op >= 153 && op <= 168) || (op >= 178 && op <= 184) ||
        op == 187 || op == 189 || op == 192 || op == 193 || op == 198 || op == 199)
        return 3;
    if (op == 197) return 4;
    if (op == 185 || op == 186 || op == 200 || op == 201) return 5;
    return op <= 201 ? 1 : -1;
}

static const char *utf8_at(const uint8_t **cp, unsigned n, unsigned i, uint16_t *len) {
    if (i == 0 || i >= n || cp[i] == NULL || cp[i][0] != 1) return NULL;
    *len = (uint16_t)(cp[i][1] << 8 | cp[i][2]);
    return (const char *)cp[i] + 3;
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) { memcpy(d, s, n); d[n] = 0; }
    return d;
}

/* From the LineNumberTable's k entries (any order): where a line starts,
 * and each offset's line (the entry with the greatest start at or before it). */
static void lines_from(method *m, const uint8_t *lnt, unsigned k) {
    for (uint32_t at = 0; at < m->code_len; at++) {
        int32_t start = -1;
        for (unsigned i = 0; i < k; i++) {
            int32_t pc = lnt[4 * i] << 8 | lnt[4 * i + 1];
            if (pc == (int32_t)at) m->line_start[at] = 1;
            if (pc <= (int32_t)at && pc > start) {
                start = pc;
                m->line_of[at] = (uint16_t)(lnt[4 * i + 2] << 8 | lnt[4 * i + 3]);
            }
        }
    }
}

static void read_method_code(method *m, reader *r, const uint8_t **cp, unsigned n_cp) {
    skip(r, 4);                                          /* max_stack, max_locals */
    uint32_t len = u4(r);
    if (r->bad || (size_t)(r->end - r->p) < len) { r->bad = 1; return; }
    m->code = malloc(len);
    m->starts = calloc(len, 1);
    m->line_of = calloc(len, sizeof *m->line_of);
    m->line_start = calloc(len, 1);
    m->ran = calloc(len, sizeof *m->ran);
    m->taken = calloc(len, sizeof *m->taken);
    m->ways = calloc((size_t)len * 64, sizeof *m->ways);
    if (!m->code || !m->starts || !m->line_of || !m->line_start || !m->ran || !m->taken || !m->ways) {
        free(m->code);
        m->code = NULL;
        r->bad = 1;
        return;
    }
    memcpy(m->code, r->p, len);
    m->code_len = len;
    skip(r, len);
    for (uint32_t at = 0; at < len; ) {
        int l = op_length(m->code, at, len);
        if (l <= 0) break;
        m->starts[at] = 1;
        at += (uint32_t)l;
    }
    skip(r, 8 * u2(r));                                  /* exception table */
    unsigned attrs = u2(r);
    for (unsigned a = 0; a < attrs && !r->bad; a++) {
        uint16_t nl = 0;
        const char *name = utf8_at(cp, n_cp, u2(r), &nl);
        uint32_t alen = u4(r);
        if (name && nl == 15 && memcmp(name, "LineNumberTable", 15) == 0 && alen >= 2 &&
            (size_t)(r->end - r->p) >= alen) {
            unsigned k = (unsigned)(r->p[0] << 8 | r->p[1]);
            if (2 + 4 * (uint32_t)k <= alen) lines_from(m, r->p + 2, k);
        }
        skip(r, alen);
    }
}

/* The class of interest parse_class read last, for the hook's pairing. */
static char hooked[256];

static void parse_class(const uint8_t *data, jint len) {
    hooked[0] = '\0';
    reader r = { data, data + len, 0 };
    if (u4(&r) != 0xCAFEBABEu) return;
    skip(&r, 4);
    unsigned n_cp = u2(&r);
    const uint8_t **cp = calloc(n_cp ? n_cp : 1, sizeof *cp);
    if (cp == NULL) return;
    for (unsigned i = 1; i < n_cp && !r.bad; i++) {
        cp[i] = r.p;
        unsigned tag = u1(&r);
        switch (tag) {
        case 1: skip(&r, u2(&r)); break;
        case 3: case 4: case 9: case 10: case 11: case 12: case 17: case 18: skip(&r, 4); break;
        case 5: case 6: skip(&r, 8); i++; break;
        case 7: case 8: case 16: case 19: case 20: skip(&r, 2); break;
        case 15: skip(&r, 3); break;
        default: r.bad = 1;
        }
    }
    skip(&r, 2);
    unsigned this_class = u2(&r);
    uint16_t nl = 0;
    const char *cname = NULL;
    if (this_class < n_cp && cp[this_class] && cp[this_class][0] == 7)
        cname = utf8_at(cp, n_cp, (unsigned)(cp[this_class][1] << 8 | cp[this_class][2]), &nl);
    if (r.bad || cname == NULL || nl < strlen(prefix) || memcmp(cname, prefix, strlen(prefix)) != 0) {
        free(cp);
        return;
    }
    snprintf(hooked, sizeof hooked, "%.*s", (int)nl, cname);
    skip(&r, 2);
    skip(&r, 2 * u2(&r));                                /* interfaces */
    unsigned fields = u2(&r);
    for (unsigned f = 0; f < fields && !r.bad; f++) {
        skip(&r, 6);
        unsigned attrs = u2(&r);
        for (unsigned a = 0; a < attrs && !r.bad; a++) { skip(&r, 2); skip(&r, u4(&r)); }
    }
    unsigned n = u2(&r);
    jvmpi->RawMonitorEnter(lock);
    for (unsigned i = 0; i < n && !r.bad; i++) {
        skip(&r, 2);
        uint16_t name_len = 0, desc_len = 0;
        const char *name = utf8_at(cp, n_cp, u2(&r), &name_len);
        const char *desc = utf8_at(cp, n_cp, u2(&r), &desc_len);
        unsigned attrs = u2(&r);
        method *m = n_methods < MAX_METHODS && name && desc ? &methods[n_methods++] : NULL;
        if (m) { m->cls = dup_n(cname, nl); m->name = dup_n(name, name_len); m->desc = dup_n(desc, desc_len); }
        for (unsigned a = 0; a < attrs && !r.bad; a++) {
            uint16_t al = 0;
            const char *aname = utf8_at(cp, n_cp, u2(&r), &al);
            uint32_t alen = u4(&r);
            const uint8_t *body = r.p;
            if (m && aname && al == 4 && memcmp(aname, "Code", 4) == 0) {
                reader code = { body, body + alen < r.end ? body + alen : r.end, 0 };
                read_method_code(m, &code, cp, n_cp);
            }
            skip(&r, alen);
        }
    }
    jvmpi->RawMonitorExit(lock);
    free(cp);
}

/* ------------------------------------------------------------ events */

static void class_load_hook(JVMPI_Event *e) {
    /* as JCov: the new bytes are a copy, from malloc_f */
    jint len = e->u.class_load_hook.class_data_len;
    e->u.class_load_hook.new_class_data = e->u.class_load_hook.malloc_f((unsigned)len);
    if (e->u.class_load_hook.new_class_data == NULL) return;
    memcpy(e->u.class_load_hook.new_class_data, e->u.class_load_hook.class_data, (size_t)len);
    e->u.class_load_hook.new_class_data_len = len;
    jvmpi->RawMonitorEnter(lock);
    parse_class(e->u.class_load_hook.class_data, len);
    /* As JCov: the hook's record waits in this thread's storage for the
     * CLASS_LOAD of the same class, which a JVMPI VM posted on this thread. */
    char **record = e->env_id ? jvmpi->GetThreadLocalStorage(e->env_id) : NULL;
    if (record != NULL && hooked[0]) {
        free(*record);
        *record = strdup(hooked);
    }
    jvmpi->RawMonitorExit(lock);
}

static long unpaired;

static void class_load(JVMPI_Event *e) {
    const char *name = e->u.class_load.class_name;
    if (strncmp(name, prefix, strlen(prefix)) != 0) return;
    jvmpi->RawMonitorEnter(lock);
    /* As JCov: a class whose hook this thread did not see is not profiled
     * ("class will not be profiled"): its methods keep no ids. */
    char **record = e->env_id ? jvmpi->GetThreadLocalStorage(e->env_id) : NULL;
    int paired = record != NULL && *record != NULL && strcmp(*record, name) == 0;
    if (paired) {
        free(*record);
        *record = NULL;
    } else {
        unpaired++;
        fprintf(stderr, "coverage_agent: %s: CLASS_LOAD on a thread that did not see its CLASS_LOAD_HOOK; "
                "not profiled\n", name);
        jvmpi->RawMonitorExit(lock);
        return;
    }
    for (jint i = 0; i < e->u.class_load.num_methods; i++) {
        JVMPI_Method *jm = &e->u.class_load.methods[i];
        for (int k = 0; k < n_methods; k++) {
            method *m = &methods[k];
            if (m->id == NULL && strcmp(m->cls, name) == 0 && strcmp(m->name, jm->method_name) == 0 &&
                strcmp(m->desc, jm->method_signature) == 0)
                m->id = jm->method_id;
        }
    }
    jvmpi->RawMonitorExit(lock);
}

static method *method_of(jmethodID id) {
    for (int k = 0; k < n_methods; k++)
        if (methods[k].id == id) return &methods[k];
    return NULL;
}

static void method_entry(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    method *m = method_of(e->u.method.method_id);
    if (m) m->entries++;
    jvmpi->RawMonitorExit(lock);
}

static void instruction(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    method *m = method_of(e->u.instruction.method_id);
    jint at = e->u.instruction.offset;
    if (m != NULL) {
        if (m->code == NULL || at < 0 || (uint32_t)at >= m->code_len || !m->starts[at]) {
            bad++;
        } else {
            m->ran[at]++;
            unsigned op = m->code[at];
            if ((op >= 0x99 && op <= 0xa6) || op == 0xc6 || op == 0xc7) {
                if (e->u.instruction.u.if_info.is_true) m->taken[at]++;
            } else if (op == 0xaa) {
                uint32_t p = ((uint32_t)at + 4) & ~3u;
                jint low = s4at(m->code + p + 4), hi = s4at(m->code + p + 8), key = e->u.instruction.u.tableswitch_info.key;
                if (e->u.instruction.u.tableswitch_info.low != low || e->u.instruction.u.tableswitch_info.hi != hi) bad++;
                int way = key >= low && key <= hi && key - low < 63 ? key - low : 63;
                m->ways[(size_t)at * 64 + (unsigned)way]++;
            } else if (op == 0xab) {
                uint32_t p = ((uint32_t)at + 4) & ~3u;
                jint pairs = s4at(m->code + p + 4), chosen = e->u.instruction.u.lookupswitch_info.chosen_pair_index;
                if (e->u.instruction.u.lookupswitch_info.pairs_total != pairs || chosen < 0 || chosen > pairs) bad++;
                else m->ways[(size_t)at * 64 + (chosen == pairs || chosen >= 63 ? 63u : (unsigned)chosen)]++;
            }
        }
    }
    jvmpi->RawMonitorExit(lock);
}

static void report(void) {
    jvmpi->RawMonitorEnter(lock);
    for (int k = 0; k < n_methods; k++) {
        method *m = &methods[k];
        if (m->id == NULL || m->code == NULL) continue;
        fprintf(out, "method %s.%s%s entries %ld", m->cls, m->name, m->desc, m->entries);
        /* lines, in code order: run if any instruction starting one of their entries ran */
        for (int pass = 0; pass < 2; pass++) {
            fprintf(out, pass == 0 ? " run " : " missed ");
            int any = 0;
            for (uint32_t at = 0; at < m->code_len; at++) {
                if (!m->line_start[at]) continue;
                uint16_t line = m->line_of[at];
                long n = 0;
                int first = 1;
                for (uint32_t q = 0; q < m->code_len; q++)
                    if (m->line_start[q] && m->line_of[q] == line) { n += m->ran[q]; if (q < at) first = 0; }
                if (!first || (pass == 0) != (n > 0)) continue;
                fprintf(out, "%s%u", any ? "," : "", line);
                any = 1;
            }
            if (!any) fprintf(out, "-");
        }
        fprintf(out, "\n");
        for (uint32_t at = 0; at < m->code_len; at++) {
            unsigned op = m->code[at];
            if (!m->starts[at]) continue;
            if ((op >= 0x99 && op <= 0xa6) || op == 0xc6 || op == 0xc7)
                fprintf(out, "branch %s.%s %u %ld/%ld\n", m->cls, m->name, m->line_of[at], m->ran[at], m->taken[at]);
            if (op == 0xaa || op == 0xab) {
                uint32_t p = (at + 4) & ~3u;
                jint ways = op == 0xaa ? s4at(m->code + p + 8) - s4at(m->code + p + 4) + 1 : s4at(m->code + p + 4);
                fprintf(out, "switch %s.%s %u ", m->cls, m->name, m->line_of[at]);
                for (jint w = 0; w < ways && w < 63; w++) {
                    jint label = op == 0xaa ? s4at(m->code + p + 4) + w : w;
                    fprintf(out, "%d:%ld,", (int)label, m->ways[(size_t)at * 64 + (unsigned)w]);
                }
                fprintf(out, "default:%ld\n", m->ways[(size_t)at * 64 + 63]);
            }
        }
    }
    fprintf(out, "bad %ld\n", bad);
    if (unpaired) fprintf(out, "unpaired %ld\n", unpaired);
    fflush(out);
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_CLASS_LOAD_HOOK: class_load_hook(e); break;
    case JVMPI_EVENT_CLASS_LOAD: class_load(e); break;
    case JVMPI_EVENT_METHOD_ENTRY: method_entry(e); break;
    case JVMPI_EVENT_INSTRUCTION_START: instruction(e); break;
    case JVMPI_EVENT_GC_START: jvmpi->RawMonitorEnter(lock); break;      /* as JCov: tables locked */
    case JVMPI_EVENT_GC_FINISH: jvmpi->RawMonitorExit(lock); break;
    case JVMPI_EVENT_THREAD_START:
        jvmpi->SetThreadLocalStorage(e->u.thread_start.thread_env_id, calloc(1, sizeof(void *)));
        break;
    case JVMPI_EVENT_THREAD_END: {
        char **record = jvmpi->GetThreadLocalStorage(e->env_id);
        if (record) free(*record);
        free(record);
        break;
    }
    case JVMPI_EVENT_JVM_SHUT_DOWN: report(); break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1_1) < 0) return JNI_ERR;
    if (!agent_option(options, "class=", prefix, sizeof prefix) ||
        (out = agent_open_out(options, "coverage_agent: options out=FILE,class=NAME[,alloc]")) == NULL)
        return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_coverage_agent");
    static const jint events[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_CLASS_LOAD_HOOK, JVMPI_EVENT_CLASS_UNLOAD,
                                   JVMPI_EVENT_OBJECT_MOVE, JVMPI_EVENT_GC_START, JVMPI_EVENT_GC_FINISH,
                                   JVMPI_EVENT_THREAD_START, JVMPI_EVENT_THREAD_END, JVMPI_EVENT_METHOD_ENTRY,
                                   JVMPI_EVENT_DATA_DUMP_REQUEST, JVMPI_EVENT_JVM_SHUT_DOWN,
                                   JVMPI_EVENT_INSTRUCTION_START };
    if (agent_enable(jvmpi, events, AGENT_COUNT(events)) != JNI_OK) return JNI_ERR;
    if (strstr(options, "alloc") != NULL && jvmpi->EnableEvent(JVMPI_EVENT_OBJECT_ALLOC, NULL) != JVMPI_SUCCESS)
        return JNI_ERR;
    return JNI_OK;
}
