/*
 * code_maps: where a method's original byte codes are in the code that runs.
 *
 * For METHOD_ENTRY/EXIT and OBJECT_ALLOC the tracker rewrites classes
 * (entry and exit calls, newArray after array allocations), so the code the
 * JVM runs, and JVMTI SingleStep's locations, are not the class file's. An
 * INSTRUCTION_START agent knows only the class file (JCov reads its
 * CharacterRangeTable, offsets of the original code, from CLASS_LOAD_HOOK):
 * the layer must post original offsets, and nothing for the rewriter's own
 * instructions, which a JVMPI VM never ran.
 *
 * The rewriter tells where each original instruction went (bci_layout_fn);
 * the tracker's hook hands that here, keyed by class name, loader and
 * method name and descriptor (the class has no jclass yet, its methods no
 * jmethodID), and SingleStep finds it by jmethodID, resolved once per
 * method. A class retransformed (the tracker's calls added later) gets a
 * new layout; frames still running the one before (obsolete methods) are
 * told apart by the length of their code (were two layouts of one length,
 * the newer would be taken). Kept only when INSTRUCTION_START
 * was enabled in JVM_OnLoad (the only time it can be), for the JVM's life:
 * a few bytes per instruction of each method rewritten.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code_maps.h"
#include "layer.h"

#define VERSIONS 8              /* layouts kept per method (the tracker's calls are added at most 3 times) */

struct jvmpi_code_map {
    uint32_t       code_len;    /* of the code that runs */
    uint32_t       n;
    bci_moved_insn insns[];
};

typedef struct method_maps {
    char        *key;           /* "class\0name\0descriptor" */
    size_t       key_len;
    jweak        loader;        /* NULL: the boot loader */
    jvmpi_code_map *versions[VERSIONS];     /* newest first */
    struct method_maps *next;
} method_maps;

/* jmethodID -> its method_maps (NULL: never rewritten, as of generation) */
typedef struct resolved {
    jmethodID    method;
    method_maps *maps;
    unsigned     generation;
} resolved;

static struct {
    atomic_int      on;
    atomic_int      any;        /* a layout was kept: before, no look-up needs the lock */
    pthread_mutex_t lock;
    method_maps   **buckets;    /* by key */
    size_t          n_buckets;
    resolved       *cache;      /* open addressing by jmethodID */
    size_t          cache_size, cache_used;
    unsigned        generation; /* bumped by every new layout: "never rewritten" may be stale */
    jweak          *loaders;    /* one weak reference per loader seen */
    size_t          n_loaders, loaders_cap;
} method_code = { .lock = PTHREAD_MUTEX_INITIALIZER };

void jvmpi_code_maps_keep(void) { atomic_store(&method_code.on, 1); }
int  jvmpi_code_maps_kept(void) { return atomic_load(&method_code.on); }

static size_t hash_bytes(const char *s, size_t n) {
    size_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

static char *make_key(const char *cls, const char *name, const char *desc, size_t *len) {
    size_t a = strlen(cls), b = strlen(name), c = strlen(desc);
    char *k = malloc(a + b + c + 3);
    if (k == NULL) return NULL;
    memcpy(k, cls, a + 1);
    memcpy(k + a + 1, name, b + 1);
    memcpy(k + a + b + 2, desc, c + 1);
    *len = a + b + c + 3;
    return k;
}

/* Under the lock. The loaders' weak references are the layer's, not the
 * program's: made under jvmpi_in_layer, no JNI_WEAK_GLOBALREF_ALLOC. */
static jweak loader_ref(JNIEnv *jni, jobject loader) {
    if (loader == NULL) return NULL;
    for (size_t i = 0; i < method_code.n_loaders; i++)
        if ((*jni)->IsSameObject(jni, method_code.loaders[i], loader)) return method_code.loaders[i];
    if (method_code.n_loaders == method_code.loaders_cap) {
        size_t cap = method_code.loaders_cap ? 2 * method_code.loaders_cap : 16;
        jweak *grown = realloc(method_code.loaders, cap * sizeof *grown);
        if (grown == NULL) return NULL;
        method_code.loaders = grown;
        method_code.loaders_cap = cap;
    }
    int was = jvmpi_in_layer;
    jvmpi_in_layer = 1;
    jweak ref = (*jni)->NewWeakGlobalRef(jni, loader);
    jvmpi_in_layer = was;
    if (ref != NULL) method_code.loaders[method_code.n_loaders++] = ref;
    return ref;
}

/* Same loader: both the boot loader, or a live loader's reference. */
static int same_loader(JNIEnv *jni, jweak ref, jobject loader) {
    if (ref == NULL || loader == NULL) return ref == NULL && loader == NULL;
    return (*jni)->IsSameObject(jni, ref, loader);
}

static method_maps *find(JNIEnv *jni, const char *key, size_t key_len, jobject loader, size_t *bucket) {
    *bucket = hash_bytes(key, key_len) % method_code.n_buckets;
    for (method_maps *m = method_code.buckets[*bucket]; m != NULL; m = m->next)
        if (m->key_len == key_len && memcmp(m->key, key, key_len) == 0 && same_loader(jni, m->loader, loader))
            return m;
    return NULL;
}

/* ------------------------------------------------------------ told by the rewriter */

struct jvmpi_layouts {
    struct told {
        char *key;
        size_t key_len;
        jvmpi_code_map *map;
        struct told *next;
    } *first;
};

void jvmpi_code_maps_told(void *context, const bci_method_info *method, const bci_moved_insn *insns, uint32_t n,
                          uint32_t new_code_len) {
    jvmpi_layouts *pending = context;
    struct told *t = malloc(sizeof *t);
    jvmpi_code_map *map = malloc(sizeof *map + (size_t)n * sizeof *insns);
    char *key = NULL;
    size_t key_len = 0;
    if (t != NULL && map != NULL) key = make_key(method->class_name, method->name, method->descriptor, &key_len);
    if (key == NULL) {                 /* out of memory: the method's offsets stay those of the code that runs */
        free(t);
        free(map);
        return;
    }
    map->code_len = new_code_len;
    map->n = n;
    memcpy(map->insns, insns, (size_t)n * sizeof *insns);
    *t = (struct told){ key, key_len, map, pending->first };
    pending->first = t;
}

jvmpi_layouts *jvmpi_code_maps_begin(void) {
    return atomic_load(&method_code.on) ? calloc(1, sizeof(jvmpi_layouts)) : NULL;
}

void jvmpi_code_maps_end(JNIEnv *jni, jvmpi_layouts *pending, jobject loader, int rewritten) {
    if (pending == NULL) return;
    pthread_mutex_lock(&method_code.lock);
    if (method_code.buckets == NULL && rewritten && pending->first != NULL) {
        method_code.n_buckets = 16384;
        method_code.buckets = calloc(method_code.n_buckets, sizeof *method_code.buckets);
        if (method_code.buckets != NULL) atomic_store(&method_code.any, 1);
    }
    struct told *t = pending->first;
    while (t != NULL) {
        struct told *next = t->next;
        size_t bucket = 0;
        method_maps *m = rewritten && method_code.buckets != NULL ? find(jni, t->key, t->key_len, loader, &bucket) : NULL;
        jweak ref = NULL;
        if (rewritten && method_code.buckets != NULL && m == NULL && (loader == NULL || (ref = loader_ref(jni, loader)) != NULL) &&
            (m = calloc(1, sizeof *m)) != NULL) {
            m->key = t->key;
            m->key_len = t->key_len;
            m->loader = ref;                                    /* NULL: the boot loader */
            m->next = method_code.buckets[bucket];
            method_code.buckets[bucket] = m;
            t->key = NULL;
        }
        if (m != NULL && m->versions[VERSIONS - 1] == NULL) {
            /* A thread may still be stepping through any earlier version: none is
             * freed, and past VERSIONS (a class redefined again and again) the
             * newer code's offsets go out as they run. */
            memmove(m->versions + 1, m->versions, (VERSIONS - 1) * sizeof *m->versions);
            m->versions[0] = t->map;
            t->map = NULL;
            method_code.generation++;
        }
        free(t->key);
        free(t->map);
        free(t);
        t = next;
    }
    pthread_mutex_unlock(&method_code.lock);
    free(pending);
}

/* ------------------------------------------------------------ asked at SingleStep */

static size_t slot_of(jmethodID method, size_t size) {
    return ((uintptr_t)method >> 3) * 11400714819323198485u % size;
}

/* Under the lock: the method's maps from its class's name and loader. */
static method_maps *resolve(JNIEnv *jni, jmethodID method) {
    jclass klass = NULL;
    char *sig = NULL, *name = NULL, *desc = NULL;
    jobject loader = NULL;
    method_maps *found = NULL;
    if ((*jvmpi_jvmti)->GetMethodDeclaringClass(jvmpi_jvmti, method, &klass) == JVMTI_ERROR_NONE &&
        (*jvmpi_jvmti)->GetClassSignature(jvmpi_jvmti, klass, &sig, NULL) == JVMTI_ERROR_NONE &&
        (*jvmpi_jvmti)->GetMethodName(jvmpi_jvmti, method, &name, &desc, NULL) == JVMTI_ERROR_NONE &&
        (*jvmpi_jvmti)->GetClassLoader(jvmpi_jvmti, klass, &loader) == JVMTI_ERROR_NONE && sig[0] == 'L') {
        size_t n = strlen(sig);
        sig[n - 1] = 0;                                         /* Lpkg/Name; -> pkg/Name */
        size_t key_len = 0, bucket = 0;
        char *key = make_key(sig + 1, name, desc, &key_len);
        if (key != NULL) found = find(jni, key, key_len, loader, &bucket);
        free(key);
    }
    if (loader != NULL) (*jni)->DeleteLocalRef(jni, loader);
    if (klass != NULL) (*jni)->DeleteLocalRef(jni, klass);
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)sig);
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)name);
    (*jvmpi_jvmti)->Deallocate(jvmpi_jvmti, (unsigned char *)desc);
    return found;
}

static void cache_grow(void) {
    size_t size = method_code.cache_size ? 2 * method_code.cache_size : 4096;
    resolved *fresh = calloc(size, sizeof *fresh);
    if (fresh == NULL) return;
    for (size_t i = 0; i < method_code.cache_size; i++) {
        if (method_code.cache[i].method == NULL) continue;
        size_t s = slot_of(method_code.cache[i].method, size);
        while (fresh[s].method != NULL) s = (s + 1) % size;
        fresh[s] = method_code.cache[i];
    }
    free(method_code.cache);
    method_code.cache = fresh;
    method_code.cache_size = size;
}

const jvmpi_code_map *jvmpi_code_map_of(JNIEnv *jni, jmethodID method, jint running_len) {
    if (!atomic_load(&method_code.any) || method == NULL) return NULL;
    pthread_mutex_lock(&method_code.lock);
    method_maps *maps = NULL;
    if (method_code.buckets != NULL) {
        if (method_code.cache_used * 2 >= method_code.cache_size) cache_grow();
        if (method_code.cache != NULL) {
            size_t s = slot_of(method, method_code.cache_size);
            while (method_code.cache[s].method != NULL && method_code.cache[s].method != method) s = (s + 1) % method_code.cache_size;
            resolved *r = &method_code.cache[s];
            if (r->method == NULL || (r->maps == NULL && r->generation != method_code.generation)) {
                if (r->method == NULL) method_code.cache_used++;
                *r = (resolved){ method, resolve(jni, method), method_code.generation };
            }
            maps = r->maps;
        }
    }
    const jvmpi_code_map *map = NULL;
    for (int v = 0; maps != NULL && v < VERSIONS && map == NULL; v++)
        if (maps->versions[v] != NULL && maps->versions[v]->code_len == (uint32_t)running_len) map = maps->versions[v];
    pthread_mutex_unlock(&method_code.lock);
    return map;
}

uint32_t jvmpi_code_map_count(const jvmpi_code_map *map) { return map->n; }
uint32_t jvmpi_code_map_at(const jvmpi_code_map *map, uint32_t i) { return map->insns[i].new_off; }

/* The instruction whose place is the last at or before `at` (index n: none). */
static uint32_t last_at_or_before(const jvmpi_code_map *map, jlocation at) {
    uint32_t lo = 0, hi = map->n;                 /* the first that starts after `at` */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((jlocation)map->insns[mid].new_off <= at) lo = mid + 1;
        else hi = mid;
    }
    return lo == 0 ? map->n : lo - 1;
}

const bci_moved_insn *jvmpi_code_map_find(const jvmpi_code_map *map, jlocation at) {
    uint32_t i = last_at_or_before(map, at);
    if (i == map->n) return NULL;                 /* before the first: the entry call */
    const bci_moved_insn *in = &map->insns[i];
    return at < (jlocation)in->new_off + (jlocation)in->new_len ? in : NULL;
}

jint jvmpi_code_map_landing(const jvmpi_code_map *map, jlocation at) {
    if (map == NULL || at < 0) return (jint)at;
    const bci_moved_insn *in = jvmpi_code_map_find(map, at);
    if (in != NULL) return (jint)in->old_off;
    /* The rewriter's code before an instruction runs on into it (a branch to
     * the instruction lands there); newArray's call after an allocation is
     * no branch's target. */
    uint32_t i = last_at_or_before(map, at);
    i = i == map->n ? 0 : i + 1;
    return i < map->n ? (jint)map->insns[i].old_off : -1;
}
