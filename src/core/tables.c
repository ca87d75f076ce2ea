/* tables.c: see tables.h. Each table = a keytab (key -> dense index) plus
 * payload arrays indexed the same way, under one mutex per table. */
#include "tables.h"
#include "idmap.h"
#include "keytab.h"
#include "hidden_names.h"
#include "stack_table.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct class_entry {
    const char *signature;
    const char *java_name;
    const char *frame_name;       /* java_name, or for a hidden class that
                                     without its address (class_frame_name) */
    int         claimed;          /* class_claim: a class object carries this serial */
    serial_t    load_trace;       /* class_set_load_trace; 0: none yet */
} class_entry;

typedef struct method_entry {
    serial_t    class_serial;
    const char *name;
    const char *signature;
    const char *source_file;
    int         is_native;
    int         kind;             /* FRAME_KIND_* */
    line_entry *lines;            /* sorted by start_bci; owned */
    uint32_t    line_count;
} method_entry;

typedef struct frame_key {
    serial_t method_serial;
    int32_t  line;
} frame_key;

/* A thread's record, in a slot that is reused once the thread is forgotten.
 * The name is the slot's own copy, freed with it: thread names are often
 * unique ("pool-7-thread-91234"), and interning them would keep every name
 * of every thread that ever ran. Groups are few: interned. */
typedef struct thread_entry {
    serial_t    serial;               /* 0: a free slot */
    char       *name;
    const char *group;
    uint64_t    object_id;
    uint64_t    end_seq;              /* 0: not ended; else 1 + how many ended before it */
} thread_entry;

/* The six tables, each under its own lock (tables.h: no function holds two). */
struct profile_tables {
    struct {
        pthread_mutex_t lock;
        keytab keys;                  /* key = the string with its NUL */
    } strings;
    struct {
        pthread_mutex_t lock;
        keytab keys;                  /* key = JVM signature with its NUL; for the
                                         n-th class of one name (n >= 2), that and
                                         n as 4 more bytes (class_intern_another) */
        class_entry *entries;
        uint32_t cap;
    } classes;
    struct {
        pthread_mutex_t lock;
        keytab keys;                  /* key = the 64-bit id */
        method_entry *entries;
        uint32_t cap;
    } methods;
    struct {
        pthread_mutex_t lock;
        keytab keys;                  /* key = frame_key; the key is the payload */
    } frames;
    struct {
        pthread_mutex_t lock;
        keytab keys;
    } traces;
    struct {
        pthread_mutex_t lock;
        thread_entry *slots;
        uint32_t      nslots, slots_cap;  /* slots[0, nslots) have been used */
        uint32_t     *free_slots;         /* slots of forgotten threads, to reuse */
        uint32_t      nfree;
        idmap         index;              /* serial -> 1 + slot */
        uint32_t      count, max;         /* serials handed out; slots held at most */
        /* Ended threads still held, oldest first (a ring of serials). */
        serial_t     *ended;
        uint32_t      ended_head, ended_n, ended_cap;
        uint32_t      keep_ended;         /* ended threads held at most; then the oldest is forgotten */
        uint64_t      ended_total;        /* end_seq of the last thread that ended */
        uint64_t      forgotten;
        size_t        name_bytes;
    } threads;
    stack_table stacks;                   /* whole stacks of these methods and threads */
};

stack_table *profile_tables_stacks(profile_tables *tables)
{
    return &tables->stacks;
}

/* Grow a payload array so that index `need` fits. */
static int ensure_capacity(void **array, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need < *cap)
        return 0;
    uint32_t ncap = *cap ? *cap : 64;
    while (ncap <= need)
        ncap *= 2;
    void *n = realloc(*array, (size_t)ncap * elem);
    if (n == NULL)
        return -1;
    *array = n;
    *cap = ncap;
    return 0;
}

/* ------------------------------------------------------------------ strings */

serial_t string_intern(profile_tables *tables, const char *s)
{
    if (s == NULL)
        return 0;
    size_t len = strlen(s) + 1;
    if (len > UINT32_MAX)
        return 0;
    pthread_mutex_lock(&tables->strings.lock);
    uint32_t idx = keytab_intern(&tables->strings.keys, s, (uint32_t)len, NULL);
    pthread_mutex_unlock(&tables->strings.lock);
    return idx == KEYTAB_FULL ? 0 : STRING_SERIAL_BASE + idx;
}

const char *string_get(profile_tables *tables, serial_t serial)
{
    if (serial < STRING_SERIAL_BASE)
        return NULL;
    pthread_mutex_lock(&tables->strings.lock);
    const char *s = keytab_key(&tables->strings.keys, serial - STRING_SERIAL_BASE, NULL);
    pthread_mutex_unlock(&tables->strings.lock);
    return s;
}

uint32_t string_count(profile_tables *tables)
{
    pthread_mutex_lock(&tables->strings.lock);
    uint32_t n = tables->strings.keys.count;
    pthread_mutex_unlock(&tables->strings.lock);
    return n;
}

/* Intern and return the stored copy (stable), or NULL if the table is full. */
static const char *stored_string(profile_tables *tables, const char *s)
{
    return string_get(tables, string_intern(tables, s));
}

/* ------------------------------------------------------------------ classes */

int signature_to_java_name(const char *sig, char *out, uint32_t size)
{
    if (size == 0)
        return -1;
    out[0] = '\0';
    if (sig == NULL)
        return -1;
    uint32_t dims = 0;
    const char *p = sig;
    while (*p == '[') {
        dims++;
        p++;
    }
    const char *base = NULL;
    size_t base_len = 0;
    switch (*p) {
    case 'Z': base = "boolean"; break;
    case 'B': base = "byte"; break;
    case 'C': base = "char"; break;
    case 'S': base = "short"; break;
    case 'I': base = "int"; break;
    case 'J': base = "long"; break;
    case 'F': base = "float"; break;
    case 'D': base = "double"; break;
    case 'V': base = "void"; break;
    case 'L': {
        const char *end = strchr(p, ';');
        if (end == NULL || end == p + 1 || end[1] != '\0')
            goto malformed;
        base = p + 1;
        base_len = (size_t)(end - base);
        break;
    }
    default:
        goto malformed;
    }
    if (*p != 'L') {
        if (p[1] != '\0')
            goto malformed;
        base_len = strlen(base);
    }
    if (base_len + 2u * dims + 1 > size)
        goto malformed;
    for (size_t i = 0; i < base_len; i++)
        out[i] = base[i] == '/' ? '.' : base[i];
    size_t n = base_len;
    for (uint32_t d = 0; d < dims; d++) {
        out[n++] = '[';
        out[n++] = ']';
    }
    out[n] = '\0';
    return 0;

malformed:
    strncpy(out, sig, size - 1);
    out[size - 1] = '\0';
    return -1;
}

/* The class of this key (made if new), named jvm_signature. */
static serial_t class_intern_key(profile_tables *tables, const char *jvm_signature, const char *key, uint32_t key_len)
{
    pthread_mutex_lock(&tables->classes.lock);
    uint32_t idx = keytab_find(&tables->classes.keys, key, key_len);
    pthread_mutex_unlock(&tables->classes.lock);
    if (idx != KEYTAB_FULL)
        return CLASS_SERIAL_BASE + idx;

    /* New class: make its names outside the class lock (string_intern takes
     * the string lock; no function holds two locks). A Java name is at most
     * twice its signature ("[I" -> "int[]") plus a primitive's name; class
     * names may be 64 KiB long, so a long one gets a heap buffer. */
    char stack_name[1024];
    size_t name_size = 2 * strlen(jvm_signature) + 8;
    char *java_name = name_size <= sizeof stack_name ? stack_name : malloc(name_size);
    if (java_name == NULL)
        return 0;
    signature_to_java_name(jvm_signature, java_name, (uint32_t)name_size);
    const char *sig_copy = stored_string(tables, jvm_signature);
    const char *name_copy = stored_string(tables, java_name);
    /* Frames are named without a hidden class's address (and JDK 17's
     * lambda counter), which change from run to run: two runs' profiles
     * then name the same lambda alike. The class keeps its full name. */
    size_t name_len = strlen(java_name);
    const char *frame_copy = name_copy;
    if (hidden_name_drop_addresses(java_name, name_len) != name_len)
        frame_copy = stored_string(tables, java_name);
    if (java_name != stack_name)
        free(java_name);
    if (sig_copy == NULL || name_copy == NULL || frame_copy == NULL)
        return 0;

    int created = 0;
    serial_t serial = 0;
    pthread_mutex_lock(&tables->classes.lock);
    /* Room for the payload first, so a key never exists without one. */
    if (ensure_capacity((void **)&tables->classes.entries, &tables->classes.cap, tables->classes.keys.count,
                        sizeof *tables->classes.entries) == 0) {
        idx = keytab_intern(&tables->classes.keys, key, key_len, &created);
        if (idx != KEYTAB_FULL) {
            if (created)
                tables->classes.entries[idx] = (class_entry){ sig_copy, name_copy, frame_copy, 0, 0 };
            serial = CLASS_SERIAL_BASE + idx;
        }
    }
    pthread_mutex_unlock(&tables->classes.lock);
    return serial;
}

/* The key length of a signature (with its NUL), room left for
 * class_intern_another's 4 more bytes; 0 for none or one too long. */
static uint32_t signature_key_len(const char *jvm_signature)
{
    if (jvm_signature == NULL)
        return 0;
    size_t len = strlen(jvm_signature) + 1;
    return len > UINT32_MAX - 8 ? 0 : (uint32_t)len;
}

serial_t class_intern(profile_tables *tables, const char *jvm_signature)
{
    uint32_t len = signature_key_len(jvm_signature);
    return len ? class_intern_key(tables, jvm_signature, jvm_signature, len) : 0;
}

serial_t class_intern_another(profile_tables *tables, const char *jvm_signature)
{
    uint32_t len = signature_key_len(jvm_signature);
    if (len == 0)
        return 0;
    char stack_key[1024 + 4];
    char *key = len + 4 <= sizeof stack_key ? stack_key : malloc(len + 4);
    if (key == NULL)
        return 0;
    memcpy(key, jvm_signature, len);
    serial_t found = 0;
    /* The first unclaimed class of this name, from the second on. */
    for (uint32_t n = 2; n < 1u << 20; n++) {
        memcpy(key + len, &n, 4);
        serial_t serial = class_intern_key(tables, jvm_signature, key, len + 4);
        if (serial == 0)
            break;
        pthread_mutex_lock(&tables->classes.lock);
        int claimed = tables->classes.entries[serial - CLASS_SERIAL_BASE].claimed;
        pthread_mutex_unlock(&tables->classes.lock);
        if (!claimed) {
            found = serial;
            break;
        }
    }
    if (key != stack_key)
        free(key);
    return found;
}

int class_claim(profile_tables *tables, serial_t serial)
{
    int first = 0;
    pthread_mutex_lock(&tables->classes.lock);
    if (serial >= CLASS_SERIAL_BASE && serial - CLASS_SERIAL_BASE < tables->classes.keys.count) {
        class_entry *e = &tables->classes.entries[serial - CLASS_SERIAL_BASE];
        first = !e->claimed;
        e->claimed = 1;
    }
    pthread_mutex_unlock(&tables->classes.lock);
    return first;
}

static const class_entry *class_entry_locked(profile_tables *tables, serial_t serial)
{
    if (serial < CLASS_SERIAL_BASE || serial - CLASS_SERIAL_BASE >= tables->classes.keys.count)
        return NULL;
    return &tables->classes.entries[serial - CLASS_SERIAL_BASE];
}

/* One of the class's names (the class_entry member at offset), under the lock. */
static const char *class_name_at(profile_tables *tables, serial_t serial, size_t offset)
{
    pthread_mutex_lock(&tables->classes.lock);
    const class_entry *e = class_entry_locked(tables, serial);
    const char *s = e ? *(const char *const *)((const char *)e + offset) : NULL;
    pthread_mutex_unlock(&tables->classes.lock);
    return s;
}

const char *class_signature(profile_tables *tables, serial_t serial)
{
    return class_name_at(tables, serial, offsetof(class_entry, signature));
}

const char *class_java_name(profile_tables *tables, serial_t serial)
{
    return class_name_at(tables, serial, offsetof(class_entry, java_name));
}

const char *class_frame_name(profile_tables *tables, serial_t serial)
{
    return class_name_at(tables, serial, offsetof(class_entry, frame_name));
}

int class_set_load_trace(profile_tables *tables, serial_t serial, serial_t trace)
{
    int set = 0;
    pthread_mutex_lock(&tables->classes.lock);
    class_entry *e = (class_entry *)class_entry_locked(tables, serial);
    if (e && e->load_trace == 0 && trace) {
        e->load_trace = trace;
        set = 1;
    }
    pthread_mutex_unlock(&tables->classes.lock);
    return set;
}

serial_t class_load_trace(profile_tables *tables, serial_t serial)
{
    pthread_mutex_lock(&tables->classes.lock);
    const class_entry *e = class_entry_locked(tables, serial);
    serial_t trace = e ? e->load_trace : 0;
    pthread_mutex_unlock(&tables->classes.lock);
    return trace;
}

uint32_t class_count(profile_tables *tables)
{
    pthread_mutex_lock(&tables->classes.lock);
    uint32_t n = tables->classes.keys.count;
    pthread_mutex_unlock(&tables->classes.lock);
    return n;
}

/* ------------------------------------------------------------------ methods */

serial_t method_find(profile_tables *tables, uint64_t id)
{
    pthread_mutex_lock(&tables->methods.lock);
    uint32_t idx = keytab_find(&tables->methods.keys, &id, sizeof id);
    pthread_mutex_unlock(&tables->methods.lock);
    return idx == KEYTAB_FULL ? 0 : METHOD_SERIAL_BASE + idx;
}

static int compare_line_entry(const void *a, const void *b)
{
    const line_entry *x = a, *y = b;
    return (x->start_bci > y->start_bci) - (x->start_bci < y->start_bci);
}

serial_t method_add(profile_tables *tables, uint64_t id, const method_desc *d)
{
    serial_t known = method_find(tables, id);
    if (known)
        return known;

    const char *name = stored_string(tables, d->name ? d->name : "<unknown>");
    const char *sig = stored_string(tables, d->signature ? d->signature : "");
    const char *src = d->source_file ? stored_string(tables, d->source_file) : NULL;
    if (name == NULL || sig == NULL)
        return 0;
    line_entry *lines = NULL;
    if (d->lines && d->line_count) {
        lines = malloc(d->line_count * sizeof *lines);
        if (lines == NULL)
            return 0;
        memcpy(lines, d->lines, d->line_count * sizeof *lines);
        qsort(lines, d->line_count, sizeof *lines, compare_line_entry);
    }

    int created = 0;
    serial_t serial = 0;
    uint32_t idx = KEYTAB_FULL;
    pthread_mutex_lock(&tables->methods.lock);
    /* Room for the payload first, so a key never exists without one. */
    if (ensure_capacity((void **)&tables->methods.entries, &tables->methods.cap, tables->methods.keys.count,
                        sizeof *tables->methods.entries) == 0)
        idx = keytab_intern(&tables->methods.keys, &id, sizeof id, &created);
    if (idx != KEYTAB_FULL && created) {
        method_entry *e = &tables->methods.entries[idx];
        e->class_serial = d->class_serial;
        e->name = name;
        e->signature = sig;
        e->source_file = src;
        e->is_native = d->is_native;
        e->kind = d->kind;
        e->lines = lines;
        e->line_count = lines ? d->line_count : 0;
        lines = NULL;
    }
    if (idx != KEYTAB_FULL)
        serial = METHOD_SERIAL_BASE + idx;
    pthread_mutex_unlock(&tables->methods.lock);
    free(lines);                   /* not stored: a racing add won, or no room */
    return serial;
}

static const method_entry *method_entry_locked(profile_tables *tables, serial_t serial)
{
    if (serial < METHOD_SERIAL_BASE || serial - METHOD_SERIAL_BASE >= tables->methods.keys.count)
        return NULL;
    return &tables->methods.entries[serial - METHOD_SERIAL_BASE];
}

int method_get(profile_tables *tables, serial_t serial, method_info *out)
{
    pthread_mutex_lock(&tables->methods.lock);
    const method_entry *e = method_entry_locked(tables, serial);
    if (e) {
        out->class_serial = e->class_serial;
        out->name = e->name;
        out->signature = e->signature;
        out->source_file = e->source_file;
        out->is_native = e->is_native;
        out->kind = e->kind;
    }
    pthread_mutex_unlock(&tables->methods.lock);
    if (e == NULL)
        return -1;
    out->class_name = class_frame_name(tables, out->class_serial);
    if (out->class_name == NULL)
        out->class_name = "<unknown class>";
    return 0;
}

int32_t method_line_of(profile_tables *tables, serial_t serial, int32_t bci)
{
    int32_t line = LINE_UNKNOWN;
    pthread_mutex_lock(&tables->methods.lock);
    const method_entry *e = method_entry_locked(tables, serial);
    if (e && e->is_native) {
        line = LINE_NATIVE;
    } else if (e && bci >= 0 && e->line_count > 0) {
        /* Last entry whose start_bci <= bci (the table is sorted). */
        uint32_t lo = 0, hi = e->line_count;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (e->lines[mid].start_bci <= bci)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0)
            line = e->lines[lo - 1].line;
    }
    pthread_mutex_unlock(&tables->methods.lock);
    return line;
}

uint32_t method_count(profile_tables *tables)
{
    pthread_mutex_lock(&tables->methods.lock);
    uint32_t n = tables->methods.keys.count;
    pthread_mutex_unlock(&tables->methods.lock);
    return n;
}

/* ------------------------------------------------------------------- frames */

serial_t frame_intern(profile_tables *tables, serial_t method_serial, int32_t line)
{
    frame_key k = { method_serial, line };
    pthread_mutex_lock(&tables->frames.lock);
    uint32_t idx = keytab_intern(&tables->frames.keys, &k, sizeof k, NULL);
    pthread_mutex_unlock(&tables->frames.lock);
    return idx == KEYTAB_FULL ? 0 : FRAME_SERIAL_BASE + idx;
}

int frame_get(profile_tables *tables, serial_t serial, serial_t *method_serial, int32_t *line)
{
    if (serial < FRAME_SERIAL_BASE)
        return -1;
    pthread_mutex_lock(&tables->frames.lock);
    const frame_key *k = keytab_key(&tables->frames.keys, serial - FRAME_SERIAL_BASE, NULL);
    pthread_mutex_unlock(&tables->frames.lock);
    if (k == NULL)
        return -1;
    *method_serial = k->method_serial;
    *line = k->line;
    return 0;
}

uint32_t frame_count(profile_tables *tables)
{
    pthread_mutex_lock(&tables->frames.lock);
    uint32_t n = tables->frames.keys.count;
    pthread_mutex_unlock(&tables->frames.lock);
    return n;
}

/* ------------------------------------------------------------------- traces */

/* Key layout: [thread serial][frame serial 0 (callee)]...[frame serial n-1].
 * The key is the payload: trace_get hands out a pointer into it. */
#define TRACE_MAX_FRAMES 1024

serial_t trace_intern(profile_tables *tables, serial_t thread_serial, const serial_t *frame_serials, uint32_t n)
{
    if (n == 0 && thread_serial == 0)
        return EMPTY_TRACE_SERIAL;          /* HPROF's fixed serial for <empty> */
    serial_t key[1 + TRACE_MAX_FRAMES];
    if (n > TRACE_MAX_FRAMES)
        n = TRACE_MAX_FRAMES;
    key[0] = thread_serial;
    if (n)
        memcpy(key + 1, frame_serials, n * sizeof *key);
    pthread_mutex_lock(&tables->traces.lock);
    uint32_t idx = keytab_intern(&tables->traces.keys, key, (1 + n) * (uint32_t)sizeof *key, NULL);
    pthread_mutex_unlock(&tables->traces.lock);
    return idx == KEYTAB_FULL ? 0 : TRACE_SERIAL_BASE + idx;
}

int trace_get(profile_tables *tables, serial_t serial, serial_t *thread_serial, const serial_t **frame_serials,
              uint32_t *n)
{
    static const serial_t empty_frames[1];
    if (serial == EMPTY_TRACE_SERIAL) {
        *thread_serial = 0;
        *frame_serials = empty_frames;
        *n = 0;
        return 0;
    }
    if (serial < TRACE_SERIAL_BASE)
        return -1;
    uint32_t len = 0;
    pthread_mutex_lock(&tables->traces.lock);
    const serial_t *k = keytab_key(&tables->traces.keys, serial - TRACE_SERIAL_BASE, &len);
    pthread_mutex_unlock(&tables->traces.lock);
    if (k == NULL)
        return -1;
    *thread_serial = k[0];
    *frame_serials = k + 1;
    *n = len / (uint32_t)sizeof *k - 1;
    return 0;
}

uint32_t trace_count(profile_tables *tables)
{
    pthread_mutex_lock(&tables->traces.lock);
    uint32_t n = tables->traces.keys.count;
    pthread_mutex_unlock(&tables->traces.lock);
    return n;
}

/* ------------------------------------------------------------------ threads */

static thread_entry *entry_locked(profile_tables *tables, serial_t serial)
{
    uint32_t slot = serial < THREAD_SERIAL_BASE ? 0 : idmap_get(&tables->threads.index, serial);
    return slot ? &tables->threads.slots[slot - 1] : NULL;
}

static void forget_locked(profile_tables *tables, thread_entry *e)
{
    uint32_t slot = (uint32_t)(e - tables->threads.slots);
    idmap_remove(&tables->threads.index, e->serial);
    tables->threads.name_bytes -= strlen(e->name) + 1;
    free(e->name);
    memset(e, 0, sizeof *e);
    tables->threads.free_slots[tables->threads.nfree++] = slot;   /* room: one per slot, made with it */
    tables->threads.forgotten++;
}

serial_t thread_add(profile_tables *tables, const char *name, const char *group, uint64_t object_id)
{
    const char *g = stored_string(tables, group ? group : "");
    char *n = strdup(name ? name : "");
    if (n == NULL || g == NULL) {
        free(n);
        return 0;
    }
    serial_t serial = 0;
    pthread_mutex_lock(&tables->threads.lock);
    uint32_t held = tables->threads.nslots - tables->threads.nfree;
    uint32_t slot = UINT32_MAX;
    if (held < tables->threads.max && tables->threads.count < UINT32_MAX - THREAD_SERIAL_BASE) {
        if (tables->threads.nfree > 0) {
            slot = tables->threads.free_slots[--tables->threads.nfree];
        } else if (ensure_capacity((void **)&tables->threads.slots, &tables->threads.slots_cap, tables->threads.nslots,
                                   sizeof *tables->threads.slots) == 0) {
            uint32_t *bigger = realloc(tables->threads.free_slots, (size_t)tables->threads.slots_cap * sizeof *bigger);
            if (bigger != NULL) {
                tables->threads.free_slots = bigger;
                slot = tables->threads.nslots++;
            }
        }
    }
    if (slot != UINT32_MAX) {
        serial = THREAD_SERIAL_BASE + tables->threads.count;
        if (idmap_put(&tables->threads.index, serial, slot + 1) == 0) {
            tables->threads.count++;
            thread_entry *e = &tables->threads.slots[slot];
            e->serial = serial;
            e->name = n;
            n = NULL;
            e->group = g;
            /* 0: an id derived from the serial, so it is unique without a race. */
            e->object_id = object_id ? object_id : THREAD_DERIVED_ID(serial);
            e->end_seq = 0;
            tables->threads.name_bytes += strlen(e->name) + 1;
        } else {
            tables->threads.free_slots[tables->threads.nfree++] = slot;
            serial = 0;
        }
    }
    pthread_mutex_unlock(&tables->threads.lock);
    free(n);
    return serial;
}

void thread_mark_ended(profile_tables *tables, serial_t serial)
{
    pthread_mutex_lock(&tables->threads.lock);
    thread_entry *e = entry_locked(tables, serial);
    if (e != NULL && e->end_seq == 0) {
        e->end_seq = ++tables->threads.ended_total;
        if (tables->threads.keep_ended == 0) {
            forget_locked(tables, e);
        } else if (tables->threads.keep_ended != UINT32_MAX) {
            if (tables->threads.ended_n == tables->threads.keep_ended) {
                thread_entry *oldest = entry_locked(tables, tables->threads.ended[tables->threads.ended_head]);
                if (oldest != NULL)
                    forget_locked(tables, oldest);
                tables->threads.ended_head = (tables->threads.ended_head + 1) % tables->threads.ended_cap;
                tables->threads.ended_n--;
            }
            if (tables->threads.ended_n < tables->threads.keep_ended && tables->threads.ended_n == tables->threads.ended_cap) {
                /* Grow the ring, oldest first again. */
                uint32_t cap = tables->threads.ended_cap ? tables->threads.ended_cap * 2 : 64;
                if (cap > tables->threads.keep_ended)
                    cap = tables->threads.keep_ended;
                serial_t *ring = malloc((size_t)cap * sizeof *ring);
                if (ring != NULL) {
                    for (uint32_t i = 0; i < tables->threads.ended_n; i++)
                        ring[i] = tables->threads.ended[(tables->threads.ended_head + i) % tables->threads.ended_cap];
                    free(tables->threads.ended);
                    tables->threads.ended = ring;
                    tables->threads.ended_cap = cap;
                    tables->threads.ended_head = 0;
                }
            }
            if (tables->threads.ended_n < tables->threads.ended_cap) {
                tables->threads.ended[(tables->threads.ended_head + tables->threads.ended_n) % tables->threads.ended_cap] = serial;
                tables->threads.ended_n++;
            }
            /* No room for it in the ring (out of memory): it stays held. */
        }
    }
    pthread_mutex_unlock(&tables->threads.lock);
}

int thread_get(profile_tables *tables, serial_t serial, thread_info *out)
{
    int rc = -1;
    pthread_mutex_lock(&tables->threads.lock);
    const thread_entry *e = entry_locked(tables, serial);
    if (e != NULL) {
        /* A copy: the entry's own name is freed if the thread is forgotten. */
        size_t len = strlen(e->name);
        out->name_truncated = len >= sizeof out->name;
        if (out->name_truncated)
            len = sizeof out->name - 1;
        memcpy(out->name, e->name, len);
        out->name[len] = '\0';
        out->group = e->group;
        out->object_id = e->object_id;
        out->ended = e->end_seq != 0;
        out->end_seq = e->end_seq;
        rc = 0;
    }
    pthread_mutex_unlock(&tables->threads.lock);
    return rc;
}

uint32_t thread_count(profile_tables *tables)
{
    pthread_mutex_lock(&tables->threads.lock);
    uint32_t n = tables->threads.count;
    pthread_mutex_unlock(&tables->threads.lock);
    return n;
}

void thread_keep_ended(profile_tables *tables, uint32_t max)
{
    pthread_mutex_lock(&tables->threads.lock);
    tables->threads.keep_ended = max;
    pthread_mutex_unlock(&tables->threads.lock);
}

uint64_t thread_forgotten_count(profile_tables *tables)
{
    pthread_mutex_lock(&tables->threads.lock);
    uint64_t n = tables->threads.forgotten;
    pthread_mutex_unlock(&tables->threads.lock);
    return n;
}

serial_t *thread_ended_since(profile_tables *tables, uint64_t after, uint32_t *n_out, uint64_t *last_seq)
{
    *n_out = 0;
    *last_seq = after;
    pthread_mutex_lock(&tables->threads.lock);
    int all = tables->threads.keep_ended == UINT32_MAX;
    uint32_t room = all ? tables->threads.nslots : tables->threads.ended_n;
    serial_t *out = malloc((room ? room : 1) * sizeof *out);
    if (out != NULL) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < room; i++) {
            /* Nothing forgotten: every ended thread is in the slots. Else
             * the ring holds the ended ones, oldest first. */
            const thread_entry *e = all ? &tables->threads.slots[i]
                                        : entry_locked(tables, tables->threads.ended[(tables->threads.ended_head + i) % tables->threads.ended_cap]);
            if (e != NULL && e->serial != 0 && e->end_seq > after)
                out[n++] = e->serial;
        }
        *n_out = n;
        *last_seq = tables->threads.ended_total > after ? tables->threads.ended_total : after;
    }
    pthread_mutex_unlock(&tables->threads.lock);
    return out;
}

int thread_records_write(profile_tables *tables, thread_records_written *written, thread_start_record start, thread_end_record end,
                         void *ctx)
{
    uint32_t n_ended;
    uint64_t ended_seq;
    /* The ends first, then the count: every thread that has ended was added
     * before, so its serial is below the count read after. */
    serial_t *ended = thread_ended_since(tables, written->ended_seq, &n_ended, &ended_seq);
    uint32_t from = written->started, to = thread_count(tables);
    if (to < from)
        to = from;
    uint8_t *started_now = calloc((to - from) / 8 + 1, 1);  /* bit per index in [from, to) */
    if (ended == NULL || started_now == NULL) {
        free(ended);
        free(started_now);
        return -1;
    }
    for (uint32_t i = from; i < to; i++) {
        thread_info ti;
        if (thread_get(tables, THREAD_SERIAL_BASE + i, &ti) != 0)
            continue;           /* forgotten (thread=n) */
        start(ctx, THREAD_SERIAL_BASE + i, &ti);
        started_now[(i - from) / 8] |= (uint8_t)(1u << ((i - from) % 8));
    }
    for (uint32_t k = 0; k < n_ended; k++) {
        uint32_t i = ended[k] - THREAD_SERIAL_BASE;
        /* Below `from`: its START went out in an earlier dump (it was held then). */
        if (i < from || (i < to && (started_now[(i - from) / 8] & (1u << ((i - from) % 8)))))
            end(ctx, ended[k]);
    }
    written->started = to;
    written->ended_seq = ended_seq;
    free(ended);
    free(started_now);
    return 0;
}

/* ---------------------------------------------------------------- lifecycle */

tables_limits tables_default_limits(void)
{
    tables_limits l = {
        .max_strings = 4u << 20,
        .max_classes = 1u << 20,
        .max_methods = 4u << 20,
        .max_frames  = 8u << 20,
        .max_traces  = 4u << 20,
        .max_threads = 4u << 20,
    };
    return l;
}

profile_tables *profile_tables_new(const tables_limits *limits)
{
    profile_tables *tables = calloc(1, sizeof *tables);
    if (tables == NULL)
        return NULL;
    tables_limits l = limits ? *limits : tables_default_limits();
    pthread_mutex_init(&tables->strings.lock, NULL);
    pthread_mutex_init(&tables->classes.lock, NULL);
    pthread_mutex_init(&tables->methods.lock, NULL);
    pthread_mutex_init(&tables->frames.lock, NULL);
    pthread_mutex_init(&tables->traces.lock, NULL);
    pthread_mutex_init(&tables->threads.lock, NULL);
    keytab_init(&tables->strings.keys, l.max_strings);
    keytab_init(&tables->classes.keys, l.max_classes);
    keytab_init(&tables->methods.keys, l.max_methods);
    keytab_init(&tables->frames.keys, l.max_frames);
    keytab_init(&tables->traces.keys, l.max_traces);
    tables->threads.max = l.max_threads;
    tables->threads.keep_ended = UINT32_MAX;
    stack_table_init(&tables->stacks);
    return tables;
}

size_t tables_payload_bytes(profile_tables *tables)
{
    size_t bytes = 0;
    pthread_mutex_lock(&tables->classes.lock);
    bytes += (size_t)tables->classes.cap * sizeof *tables->classes.entries;
    pthread_mutex_unlock(&tables->classes.lock);
    pthread_mutex_lock(&tables->methods.lock);
    bytes += (size_t)tables->methods.cap * sizeof *tables->methods.entries;
    for (uint32_t i = 0; i < tables->methods.keys.count; i++)
        bytes += (size_t)tables->methods.entries[i].line_count * sizeof *tables->methods.entries[i].lines;
    pthread_mutex_unlock(&tables->methods.lock);
    pthread_mutex_lock(&tables->threads.lock);
    bytes += (size_t)tables->threads.slots_cap * (sizeof *tables->threads.slots + sizeof *tables->threads.free_slots) +
             (size_t)tables->threads.index.capacity * (sizeof *tables->threads.index.keys + sizeof *tables->threads.index.ids) +
             (size_t)tables->threads.ended_cap * sizeof *tables->threads.ended + tables->threads.name_bytes;
    pthread_mutex_unlock(&tables->threads.lock);
    return bytes;
}

void profile_tables_free(profile_tables *tables)
{
    if (tables == NULL)
        return;
    for (uint32_t i = 0; i < tables->methods.keys.count; i++)
        free(tables->methods.entries[i].lines);
    free(tables->methods.entries);
    free(tables->classes.entries);
    for (uint32_t i = 0; i < tables->threads.nslots; i++)
        free(tables->threads.slots[i].name);
    free(tables->threads.slots);
    free(tables->threads.free_slots);
    idmap_free(&tables->threads.index);
    free(tables->threads.ended);
    keytab_free(&tables->strings.keys);
    keytab_free(&tables->classes.keys);
    keytab_free(&tables->methods.keys);
    keytab_free(&tables->frames.keys);
    keytab_free(&tables->traces.keys);
    pthread_mutex_destroy(&tables->strings.lock);
    pthread_mutex_destroy(&tables->classes.lock);
    pthread_mutex_destroy(&tables->methods.lock);
    pthread_mutex_destroy(&tables->frames.lock);
    pthread_mutex_destroy(&tables->traces.lock);
    pthread_mutex_destroy(&tables->threads.lock);
    stack_table_free(&tables->stacks);
    free(tables);
}

