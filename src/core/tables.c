/* tables.c: see tables.h. Each table = a keytab (key -> dense index) plus
 * payload arrays indexed the same way, under one mutex per table. */
#include "tables.h"
#include "idmap.h"
#include "keytab.h"
#include "../profile/profile.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

static struct {
    pthread_mutex_t lock;
    keytab keys;                  /* key = the string with its NUL */
} strings = { PTHREAD_MUTEX_INITIALIZER, {0} };

serial_t string_intern(const char *s)
{
    if (s == NULL)
        return 0;
    size_t len = strlen(s) + 1;
    if (len > UINT32_MAX)
        return 0;
    pthread_mutex_lock(&strings.lock);
    uint32_t idx = keytab_intern(&strings.keys, s, (uint32_t)len, NULL);
    pthread_mutex_unlock(&strings.lock);
    return idx == KEYTAB_FULL ? 0 : STRING_SERIAL_BASE + idx;
}

const char *string_get(serial_t serial)
{
    if (serial < STRING_SERIAL_BASE)
        return NULL;
    pthread_mutex_lock(&strings.lock);
    const char *s = keytab_key(&strings.keys, serial - STRING_SERIAL_BASE, NULL);
    pthread_mutex_unlock(&strings.lock);
    return s;
}

uint32_t string_count(void)
{
    pthread_mutex_lock(&strings.lock);
    uint32_t n = strings.keys.count;
    pthread_mutex_unlock(&strings.lock);
    return n;
}

/* Intern and return the stored copy (stable), or NULL if the table is full. */
static const char *stored_string(const char *s)
{
    return string_get(string_intern(s));
}

/* ------------------------------------------------------------------ classes */

typedef struct class_entry {
    const char *signature;
    const char *java_name;
    const char *frame_name;       /* java_name, or for a hidden class that
                                     without its address (class_frame_name) */
    int         claimed;          /* class_claim: a class object carries this serial */
    serial_t    load_trace;       /* class_set_load_trace; 0: none yet */
} class_entry;

static struct {
    pthread_mutex_t lock;
    keytab keys;                  /* key = JVM signature with its NUL; for the
                                     n-th class of one name (n >= 2), that and
                                     n as 4 more bytes (class_intern_another) */
    class_entry *entries;
    uint32_t cap;
} classes = { PTHREAD_MUTEX_INITIALIZER, {0}, NULL, 0 };

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
static serial_t class_intern_key(const char *jvm_signature, const char *key, uint32_t key_len)
{
    pthread_mutex_lock(&classes.lock);
    uint32_t idx = keytab_find(&classes.keys, key, key_len);
    pthread_mutex_unlock(&classes.lock);
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
    const char *sig_copy = stored_string(jvm_signature);
    const char *name_copy = stored_string(java_name);
    /* Frames are named without a hidden class's address (and JDK 17's
     * lambda counter), which change from run to run: two runs' profiles
     * then name the same lambda alike. The class keeps its full name. */
    size_t name_len = strlen(java_name);
    const char *frame_copy = name_copy;
    if (profile_name_drop_addresses(java_name, name_len) != name_len)
        frame_copy = stored_string(java_name);
    if (java_name != stack_name)
        free(java_name);
    if (sig_copy == NULL || name_copy == NULL || frame_copy == NULL)
        return 0;

    int created = 0;
    serial_t serial = 0;
    pthread_mutex_lock(&classes.lock);
    /* Room for the payload first, so a key never exists without one. */
    if (ensure_capacity((void **)&classes.entries, &classes.cap, classes.keys.count,
                        sizeof *classes.entries) == 0) {
        idx = keytab_intern(&classes.keys, key, key_len, &created);
        if (idx != KEYTAB_FULL) {
            if (created)
                classes.entries[idx] = (class_entry){ sig_copy, name_copy, frame_copy, 0, 0 };
            serial = CLASS_SERIAL_BASE + idx;
        }
    }
    pthread_mutex_unlock(&classes.lock);
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

serial_t class_intern(const char *jvm_signature)
{
    uint32_t len = signature_key_len(jvm_signature);
    return len ? class_intern_key(jvm_signature, jvm_signature, len) : 0;
}

serial_t class_intern_another(const char *jvm_signature)
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
        serial_t serial = class_intern_key(jvm_signature, key, len + 4);
        if (serial == 0)
            break;
        pthread_mutex_lock(&classes.lock);
        int claimed = classes.entries[serial - CLASS_SERIAL_BASE].claimed;
        pthread_mutex_unlock(&classes.lock);
        if (!claimed) {
            found = serial;
            break;
        }
    }
    if (key != stack_key)
        free(key);
    return found;
}

int class_claim(serial_t serial)
{
    int first = 0;
    pthread_mutex_lock(&classes.lock);
    if (serial >= CLASS_SERIAL_BASE && serial - CLASS_SERIAL_BASE < classes.keys.count) {
        class_entry *e = &classes.entries[serial - CLASS_SERIAL_BASE];
        first = !e->claimed;
        e->claimed = 1;
    }
    pthread_mutex_unlock(&classes.lock);
    return first;
}

static const class_entry *class_entry_locked(serial_t serial)
{
    if (serial < CLASS_SERIAL_BASE || serial - CLASS_SERIAL_BASE >= classes.keys.count)
        return NULL;
    return &classes.entries[serial - CLASS_SERIAL_BASE];
}

/* One of the class's names (the class_entry member at offset), under the lock. */
static const char *class_name_at(serial_t serial, size_t offset)
{
    pthread_mutex_lock(&classes.lock);
    const class_entry *e = class_entry_locked(serial);
    const char *s = e ? *(const char *const *)((const char *)e + offset) : NULL;
    pthread_mutex_unlock(&classes.lock);
    return s;
}

const char *class_signature(serial_t serial)
{
    return class_name_at(serial, offsetof(class_entry, signature));
}

const char *class_java_name(serial_t serial)
{
    return class_name_at(serial, offsetof(class_entry, java_name));
}

const char *class_frame_name(serial_t serial)
{
    return class_name_at(serial, offsetof(class_entry, frame_name));
}

int class_set_load_trace(serial_t serial, serial_t trace)
{
    int set = 0;
    pthread_mutex_lock(&classes.lock);
    class_entry *e = (class_entry *)class_entry_locked(serial);
    if (e && e->load_trace == 0 && trace) {
        e->load_trace = trace;
        set = 1;
    }
    pthread_mutex_unlock(&classes.lock);
    return set;
}

serial_t class_load_trace(serial_t serial)
{
    pthread_mutex_lock(&classes.lock);
    const class_entry *e = class_entry_locked(serial);
    serial_t trace = e ? e->load_trace : 0;
    pthread_mutex_unlock(&classes.lock);
    return trace;
}

uint32_t class_count(void)
{
    pthread_mutex_lock(&classes.lock);
    uint32_t n = classes.keys.count;
    pthread_mutex_unlock(&classes.lock);
    return n;
}

/* ------------------------------------------------------------------ methods */

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

static struct {
    pthread_mutex_t lock;
    keytab keys;                  /* key = the 64-bit id */
    method_entry *entries;
    uint32_t cap;
} methods = { PTHREAD_MUTEX_INITIALIZER, {0}, NULL, 0 };

serial_t method_find(uint64_t id)
{
    pthread_mutex_lock(&methods.lock);
    uint32_t idx = keytab_find(&methods.keys, &id, sizeof id);
    pthread_mutex_unlock(&methods.lock);
    return idx == KEYTAB_FULL ? 0 : METHOD_SERIAL_BASE + idx;
}

static int compare_line_entry(const void *a, const void *b)
{
    const line_entry *x = a, *y = b;
    return (x->start_bci > y->start_bci) - (x->start_bci < y->start_bci);
}

serial_t method_add(uint64_t id, const method_desc *d)
{
    serial_t known = method_find(id);
    if (known)
        return known;

    const char *name = stored_string(d->name ? d->name : "<unknown>");
    const char *sig = stored_string(d->signature ? d->signature : "");
    const char *src = d->source_file ? stored_string(d->source_file) : NULL;
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
    pthread_mutex_lock(&methods.lock);
    /* Room for the payload first, so a key never exists without one. */
    if (ensure_capacity((void **)&methods.entries, &methods.cap, methods.keys.count,
                        sizeof *methods.entries) == 0)
        idx = keytab_intern(&methods.keys, &id, sizeof id, &created);
    if (idx != KEYTAB_FULL && created) {
        method_entry *e = &methods.entries[idx];
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
    pthread_mutex_unlock(&methods.lock);
    free(lines);                   /* not stored: a racing add won, or no room */
    return serial;
}

static const method_entry *method_entry_locked(serial_t serial)
{
    if (serial < METHOD_SERIAL_BASE || serial - METHOD_SERIAL_BASE >= methods.keys.count)
        return NULL;
    return &methods.entries[serial - METHOD_SERIAL_BASE];
}

int method_get(serial_t serial, method_info *out)
{
    pthread_mutex_lock(&methods.lock);
    const method_entry *e = method_entry_locked(serial);
    if (e) {
        out->class_serial = e->class_serial;
        out->name = e->name;
        out->signature = e->signature;
        out->source_file = e->source_file;
        out->is_native = e->is_native;
        out->kind = e->kind;
    }
    pthread_mutex_unlock(&methods.lock);
    if (e == NULL)
        return -1;
    out->class_name = class_frame_name(out->class_serial);
    if (out->class_name == NULL)
        out->class_name = "<unknown class>";
    return 0;
}

int32_t method_line_of(serial_t serial, int32_t bci)
{
    int32_t line = LINE_UNKNOWN;
    pthread_mutex_lock(&methods.lock);
    const method_entry *e = method_entry_locked(serial);
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
    pthread_mutex_unlock(&methods.lock);
    return line;
}

uint32_t method_count(void)
{
    pthread_mutex_lock(&methods.lock);
    uint32_t n = methods.keys.count;
    pthread_mutex_unlock(&methods.lock);
    return n;
}

/* ------------------------------------------------------------------- frames */

typedef struct frame_key {
    serial_t method_serial;
    int32_t  line;
} frame_key;

static struct {
    pthread_mutex_t lock;
    keytab keys;                  /* key = frame_key; the key is the payload */
} frames = { PTHREAD_MUTEX_INITIALIZER, {0} };

serial_t frame_intern(serial_t method_serial, int32_t line)
{
    frame_key k = { method_serial, line };
    pthread_mutex_lock(&frames.lock);
    uint32_t idx = keytab_intern(&frames.keys, &k, sizeof k, NULL);
    pthread_mutex_unlock(&frames.lock);
    return idx == KEYTAB_FULL ? 0 : FRAME_SERIAL_BASE + idx;
}

int frame_get(serial_t serial, serial_t *method_serial, int32_t *line)
{
    if (serial < FRAME_SERIAL_BASE)
        return -1;
    pthread_mutex_lock(&frames.lock);
    const frame_key *k = keytab_key(&frames.keys, serial - FRAME_SERIAL_BASE, NULL);
    pthread_mutex_unlock(&frames.lock);
    if (k == NULL)
        return -1;
    *method_serial = k->method_serial;
    *line = k->line;
    return 0;
}

uint32_t frame_count(void)
{
    pthread_mutex_lock(&frames.lock);
    uint32_t n = frames.keys.count;
    pthread_mutex_unlock(&frames.lock);
    return n;
}

/* ------------------------------------------------------------------- traces */

/* Key layout: [thread serial][frame serial 0 (callee)]...[frame serial n-1].
 * The key is the payload: trace_get hands out a pointer into it. */
#define TRACE_MAX_FRAMES 1024

static struct {
    pthread_mutex_t lock;
    keytab keys;
} traces = { PTHREAD_MUTEX_INITIALIZER, {0} };

serial_t trace_intern(serial_t thread_serial, const serial_t *frame_serials, uint32_t n)
{
    if (n == 0 && thread_serial == 0)
        return EMPTY_TRACE_SERIAL;          /* HPROF's fixed serial for <empty> */
    serial_t key[1 + TRACE_MAX_FRAMES];
    if (n > TRACE_MAX_FRAMES)
        n = TRACE_MAX_FRAMES;
    key[0] = thread_serial;
    if (n)
        memcpy(key + 1, frame_serials, n * sizeof *key);
    pthread_mutex_lock(&traces.lock);
    uint32_t idx = keytab_intern(&traces.keys, key, (1 + n) * (uint32_t)sizeof *key, NULL);
    pthread_mutex_unlock(&traces.lock);
    return idx == KEYTAB_FULL ? 0 : TRACE_SERIAL_BASE + idx;
}

int trace_get(serial_t serial, serial_t *thread_serial, const serial_t **frame_serials,
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
    pthread_mutex_lock(&traces.lock);
    const serial_t *k = keytab_key(&traces.keys, serial - TRACE_SERIAL_BASE, &len);
    pthread_mutex_unlock(&traces.lock);
    if (k == NULL)
        return -1;
    *thread_serial = k[0];
    *frame_serials = k + 1;
    *n = len / (uint32_t)sizeof *k - 1;
    return 0;
}

uint32_t trace_count(void)
{
    pthread_mutex_lock(&traces.lock);
    uint32_t n = traces.keys.count;
    pthread_mutex_unlock(&traces.lock);
    return n;
}

/* ------------------------------------------------------------------ threads */

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

static struct {
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
} threads = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, NULL, 0, {NULL, NULL, 0, 0}, 0, 0,
              NULL, 0, 0, 0, UINT32_MAX, 0, 0, 0 };

static thread_entry *entry_locked(serial_t serial)
{
    uint32_t slot = serial < THREAD_SERIAL_BASE ? 0 : idmap_get(&threads.index, serial);
    return slot ? &threads.slots[slot - 1] : NULL;
}

static void forget_locked(thread_entry *e)
{
    uint32_t slot = (uint32_t)(e - threads.slots);
    idmap_remove(&threads.index, e->serial);
    threads.name_bytes -= strlen(e->name) + 1;
    free(e->name);
    memset(e, 0, sizeof *e);
    threads.free_slots[threads.nfree++] = slot;   /* room: one per slot, made with it */
    threads.forgotten++;
}

serial_t thread_add(const char *name, const char *group, uint64_t object_id)
{
    const char *g = stored_string(group ? group : "");
    char *n = strdup(name ? name : "");
    if (n == NULL || g == NULL) {
        free(n);
        return 0;
    }
    serial_t serial = 0;
    pthread_mutex_lock(&threads.lock);
    uint32_t held = threads.nslots - threads.nfree;
    uint32_t slot = UINT32_MAX;
    if (held < threads.max && threads.count < UINT32_MAX - THREAD_SERIAL_BASE) {
        if (threads.nfree > 0) {
            slot = threads.free_slots[--threads.nfree];
        } else if (ensure_capacity((void **)&threads.slots, &threads.slots_cap, threads.nslots,
                                   sizeof *threads.slots) == 0) {
            uint32_t *bigger = realloc(threads.free_slots, (size_t)threads.slots_cap * sizeof *bigger);
            if (bigger != NULL) {
                threads.free_slots = bigger;
                slot = threads.nslots++;
            }
        }
    }
    if (slot != UINT32_MAX) {
        serial = THREAD_SERIAL_BASE + threads.count;
        if (idmap_put(&threads.index, serial, slot + 1) == 0) {
            threads.count++;
            thread_entry *e = &threads.slots[slot];
            e->serial = serial;
            e->name = n;
            n = NULL;
            e->group = g;
            /* 0: an id derived from the serial, so it is unique without a race. */
            e->object_id = object_id ? object_id : THREAD_DERIVED_ID(serial);
            e->end_seq = 0;
            threads.name_bytes += strlen(e->name) + 1;
        } else {
            threads.free_slots[threads.nfree++] = slot;
            serial = 0;
        }
    }
    pthread_mutex_unlock(&threads.lock);
    free(n);
    return serial;
}

void thread_mark_ended(serial_t serial)
{
    pthread_mutex_lock(&threads.lock);
    thread_entry *e = entry_locked(serial);
    if (e != NULL && e->end_seq == 0) {
        e->end_seq = ++threads.ended_total;
        if (threads.keep_ended == 0) {
            forget_locked(e);
        } else if (threads.keep_ended != UINT32_MAX) {
            if (threads.ended_n == threads.keep_ended) {
                thread_entry *oldest = entry_locked(threads.ended[threads.ended_head]);
                if (oldest != NULL)
                    forget_locked(oldest);
                threads.ended_head = (threads.ended_head + 1) % threads.ended_cap;
                threads.ended_n--;
            }
            if (threads.ended_n < threads.keep_ended && threads.ended_n == threads.ended_cap) {
                /* Grow the ring, oldest first again. */
                uint32_t cap = threads.ended_cap ? threads.ended_cap * 2 : 64;
                if (cap > threads.keep_ended)
                    cap = threads.keep_ended;
                serial_t *ring = malloc((size_t)cap * sizeof *ring);
                if (ring != NULL) {
                    for (uint32_t i = 0; i < threads.ended_n; i++)
                        ring[i] = threads.ended[(threads.ended_head + i) % threads.ended_cap];
                    free(threads.ended);
                    threads.ended = ring;
                    threads.ended_cap = cap;
                    threads.ended_head = 0;
                }
            }
            if (threads.ended_n < threads.ended_cap) {
                threads.ended[(threads.ended_head + threads.ended_n) % threads.ended_cap] = serial;
                threads.ended_n++;
            }
            /* No room for it in the ring (out of memory): it stays held. */
        }
    }
    pthread_mutex_unlock(&threads.lock);
}

int thread_get(serial_t serial, thread_info *out)
{
    int rc = -1;
    pthread_mutex_lock(&threads.lock);
    const thread_entry *e = entry_locked(serial);
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
    pthread_mutex_unlock(&threads.lock);
    return rc;
}

uint32_t thread_count(void)
{
    pthread_mutex_lock(&threads.lock);
    uint32_t n = threads.count;
    pthread_mutex_unlock(&threads.lock);
    return n;
}

void thread_keep_ended(uint32_t max)
{
    pthread_mutex_lock(&threads.lock);
    threads.keep_ended = max;
    pthread_mutex_unlock(&threads.lock);
}

uint64_t thread_forgotten_count(void)
{
    pthread_mutex_lock(&threads.lock);
    uint64_t n = threads.forgotten;
    pthread_mutex_unlock(&threads.lock);
    return n;
}

serial_t *thread_ended_since(uint64_t after, uint32_t *n_out, uint64_t *last_seq)
{
    *n_out = 0;
    *last_seq = after;
    pthread_mutex_lock(&threads.lock);
    int all = threads.keep_ended == UINT32_MAX;
    uint32_t room = all ? threads.nslots : threads.ended_n;
    serial_t *out = malloc((room ? room : 1) * sizeof *out);
    if (out != NULL) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < room; i++) {
            /* Nothing forgotten: every ended thread is in the slots. Else
             * the ring holds the ended ones, oldest first. */
            const thread_entry *e = all ? &threads.slots[i]
                                        : entry_locked(threads.ended[(threads.ended_head + i) % threads.ended_cap]);
            if (e != NULL && e->serial != 0 && e->end_seq > after)
                out[n++] = e->serial;
        }
        *n_out = n;
        *last_seq = threads.ended_total > after ? threads.ended_total : after;
    }
    pthread_mutex_unlock(&threads.lock);
    return out;
}

int thread_records_write(thread_records_written *written, thread_start_record start, thread_end_record end,
                         void *ctx)
{
    uint32_t n_ended;
    uint64_t ended_seq;
    /* The ends first, then the count: every thread that has ended was added
     * before, so its serial is below the count read after. */
    serial_t *ended = thread_ended_since(written->ended_seq, &n_ended, &ended_seq);
    uint32_t from = written->started, to = thread_count();
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
        if (thread_get(THREAD_SERIAL_BASE + i, &ti) != 0)
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

int tables_init(const tables_limits *limits)
{
    tables_limits l = limits ? *limits : tables_default_limits();
    keytab_init(&strings.keys, l.max_strings);
    keytab_init(&classes.keys, l.max_classes);
    keytab_init(&methods.keys, l.max_methods);
    keytab_init(&frames.keys, l.max_frames);
    keytab_init(&traces.keys, l.max_traces);
    threads.max = l.max_threads;
    return 0;
}

size_t tables_payload_bytes(void)
{
    size_t bytes = 0;
    pthread_mutex_lock(&classes.lock);
    bytes += (size_t)classes.cap * sizeof *classes.entries;
    pthread_mutex_unlock(&classes.lock);
    pthread_mutex_lock(&methods.lock);
    bytes += (size_t)methods.cap * sizeof *methods.entries;
    for (uint32_t i = 0; i < methods.keys.count; i++)
        bytes += (size_t)methods.entries[i].line_count * sizeof *methods.entries[i].lines;
    pthread_mutex_unlock(&methods.lock);
    pthread_mutex_lock(&threads.lock);
    bytes += (size_t)threads.slots_cap * (sizeof *threads.slots + sizeof *threads.free_slots) +
             (size_t)threads.index.capacity * (sizeof *threads.index.keys + sizeof *threads.index.ids) +
             (size_t)threads.ended_cap * sizeof *threads.ended + threads.name_bytes;
    pthread_mutex_unlock(&threads.lock);
    return bytes;
}

void tables_free(void)
{
    for (uint32_t i = 0; i < methods.keys.count; i++)
        free(methods.entries[i].lines);
    free(methods.entries);
    methods.entries = NULL;
    methods.cap = 0;
    free(classes.entries);
    classes.entries = NULL;
    classes.cap = 0;
    for (uint32_t i = 0; i < threads.nslots; i++)
        free(threads.slots[i].name);
    free(threads.slots);
    free(threads.free_slots);
    idmap_free(&threads.index);
    free(threads.ended);
    threads.slots = NULL;
    threads.free_slots = NULL;
    threads.ended = NULL;
    threads.nslots = threads.slots_cap = threads.nfree = threads.count = 0;
    threads.ended_head = threads.ended_n = threads.ended_cap = 0;
    threads.keep_ended = UINT32_MAX;
    threads.ended_total = threads.forgotten = 0;
    threads.name_bytes = 0;
    keytab_free(&strings.keys);
    keytab_free(&classes.keys);
    keytab_free(&methods.keys);
    keytab_free(&frames.keys);
    keytab_free(&traces.keys);
}
