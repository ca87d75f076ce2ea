/* heap_dump: see heap_dump.h. Before the walk (the classes, the threads,
 * the dump's own JVMTI environment) and heap_dump_write; the rest in
 * heap_dump_sink.c (writing what the walk meets, then what it deferred),
 * heap_dump_records.c (the tables' records) and heap_dump_jvm.c (the
 * JVM's own dumper); heap_dump_internal.h is what they share. */
#include "heap_dump_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/tables.h"
#include "../heap/heap_tags.h"
#include "../heap/site_table.h"
#include "field_layout.h"
#include "heap_walk.h"
#include "jvmti_support.h"
#include "orchestrator.h"

/* ------------------------------------------------------ before the walk */

/* The layouts' view of the walk's classes: keyed by class serial. */
static fl_class *layout_get(void *ctx, uint32_t key)
{
    dclass *c = heap_dump_class_of_serial(ctx, key);
    return c ? &c->f : NULL;
}

static uint32_t layout_key_of(void *ctx, JNIEnv *jni, jclass k)
{
    (void)ctx; (void)jni;
    return class_serial_of_klass(k);
}

/* A thread's object is numbered before the walk, which then meets it as
 * known and gives its class no instance size (heap_dump_sink.c takes one
 * at an object's first sight): the size the text dump prints (sz=) for
 * each instance of the class is taken here, or a class whose instances are
 * all threads (java.lang.ref.Reference$ReferenceHandler) printed sz=0. */
static void note_instance_size(JNIEnv *jni, jvmtiEnv *jvmti, walk *w, jobject o)
{
    jclass k = (*jni)->GetObjectClass(jni, o);
    dclass *c = k ? heap_dump_class_of_serial(w, class_serial_of_klass(k)) : NULL;
    jlong size = 0;
    if (c && !c->f.is_array && c->obj_size == 0 &&
        !jvmti_failed((*jvmti)->GetObjectSize(jvmti, o, &size), "GetObjectSize"))
        c->obj_size = size;
    if (k)
        (*jni)->DeleteLocalRef(jni, k);
}

/* The HPROF records' part of a class read: field names interned (before
 * the file's UTF8 records are written), the statics' slots for values. */
static int name_fields(dclass *c)
{
    for (uint32_t i = 0; i < c->f.n_own_pos; i++)
        string_intern(agent_tables(), c->f.pos[i].name);
    c->statics = calloc(c->f.n_statics ? c->f.n_statics : 1, sizeof *c->statics);
    if (c->statics == NULL)
        return -1;
    for (uint32_t i = 0; i < c->f.n_statics; i++)
        c->statics[i] = (hb_static){ STRING_ID(string_intern(agent_tables(), c->f.statics[i].name)), { c->f.statics[i].type, 0 } };
    return 0;
}

static void free_walk(walk *w)
{
    for (uint32_t i = 0; w->classes && i < w->nclasses; i++) {
        dclass *c = &w->classes[i];
        field_layout_free(&c->f);
        free(c->statics);
    }
    free(w->classes);
    free(w->threads);
    free(w->mirrors);
    heap_walk_free_deferred(&w->deferred);
    free(w->resolved);
}

/* A JVMTI environment of its own for one dump. The walk gives every object
 * it meets a tag, and the JVM's tag map is the walk's cost (measured on JDK
 * 17 and 25: lookups in it are most of the dump's time). In the agent's own
 * environment those tags would have to be taken off again by a pass over
 * the whole heap, and they would leave that environment's map grown to the
 * heap's size for the rest of the run (the JVM never shrinks it; each later
 * GC works through it). Disposing of this environment drops them all at once. */
static jvmtiEnv *dump_env_open(void)
{
    jvmtiEnv *env = NULL;
    if ((*hprof_vm)->GetEnv(hprof_vm, (void **)&env, JVMTI_VERSION_1_2) != JNI_OK || env == NULL) {
        fprintf(stderr, "hprof: heap dump: no JVMTI environment of its own; the dump uses the agent's\n");
        return NULL;
    }
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    caps.can_tag_objects = 1;
    if (jvmti_failed((*env)->AddCapabilities(env, &caps), "AddCapabilities (heap dump)")) {
        (*env)->DisposeEnvironment(env);
        return NULL;
    }
    return env;
}

/* After a walk in the agent's environment: the ids off, class tags kept. */
static jint JNICALL restore_tag(jlong class_tag, jlong size, jlong *tag_ptr, jint length, void *user_data)
{
    (void)class_tag; (void)size; (void)length; (void)user_data;
    if (heap_tag_is_dump(*tag_ptr) || heap_tag_subsite(*tag_ptr))
        *tag_ptr = 0;
    return 0;
}

/* The ids go, whatever happened: with the dump's own environment, or off
 * the agent's tags. */
static void drop_ids(jvmtiEnv *own)
{
    if (own) {
        jvmti_failed((*own)->DisposeEnvironment(own), "DisposeEnvironment (heap dump)");
        return;
    }
    jvmtiHeapCallbacks rc;
    memset(&rc, 0, sizeof rc);
    rc.heap_iteration_callback = restore_tag;
    jvmti_failed((*hprof_jvmti)->IterateThroughHeap(hprof_jvmti, JVMTI_HEAP_FILTER_UNTAGGED, NULL, &rc, NULL),
                 "IterateThroughHeap (restoring tags after a heap dump)");
}

/* Every loaded class not read yet gets its layout (the classes are in the
 * table by serial, grown as needed). tag: the dump's environment tags
 * their Class objects with their serials (before the walk; after it, the
 * tags are the walk's ids). 0, or -1 when memory or JVMTI fails. */
int heap_dump_read_classes(JNIEnv *jni, walk *w, int tag)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    jint n = 0;
    jclass *classes = NULL;
    if (jvmti_failed((*jvmti)->GetLoadedClasses(jvmti, &n, &classes), "GetLoadedClasses"))
        return -1;
    jvmti_hold_locals(jni, n);
    /* Serials first (they tag the class objects), then the table sized. */
    serial_t *serials = calloc(n ? (size_t)n : 1, sizeof *serials);
    if (serials == NULL) { jvmti_free(classes); return -1; }
    /* Class objects are tagged with their serials in the dump environment
     * too: the walk knows every object's class by its class's tag. */
    for (jint i = 0; i < n; i++) {
        serials[i] = class_serial_of_klass(classes[i]);
        if (tag && serials[i] && w->tags != jvmti)
            (*w->tags)->SetTag(w->tags, classes[i], (jlong)serials[i]);
    }
    uint32_t want = class_count(agent_tables()) + 64;
    int rc = 0;
    if (want > w->nclasses) {
        dclass *more = realloc(w->classes, want * sizeof *more);
        if (more == NULL) {
            rc = -1;
        } else {
            memset(more + w->nclasses, 0, (want - w->nclasses) * sizeof *more);
            w->classes = more;
            w->nclasses = want;
        }
    }
    fl_classes layouts = { layout_get, layout_key_of, w };
    for (jint i = 0; i < n && rc == 0; i++) {
        dclass *c = serials[i] >= CLASS_SERIAL_BASE && serials[i] - CLASS_SERIAL_BASE < w->nclasses
                  ? &w->classes[serials[i] - CLASS_SERIAL_BASE] : NULL;
        /* Two classes of one name (two loaders) have two serials
         * (class_serial_of_klass), so each has its own entry. */
        if (c == NULL || c->loaded)
            continue;
        if (field_layout_read(jni, jvmti, &layouts, classes[i], &c->f) != 0 || name_fields(c) != 0) {
            field_layout_free(&c->f);          /* the class is left out, as one JVMTI cannot read */
            free(c->statics);
            c->statics = NULL;
        } else {
            c->loaded = 1;
            c->name = class_java_name(agent_tables(), serials[i]);
            if (c->name == NULL) c->name = "?";
        }
    }
    /* Names interned above may have added classes (array element types). */
    uint32_t stamp = 0, maxpos = w->max_positions ? w->max_positions : 1;
    for (uint32_t i = 0; i < w->nclasses && rc == 0; i++) {
        dclass *c = &w->classes[i];
        if (!c->loaded) continue;
        if (field_layout_complete(&layouts, &c->f, &stamp) != 0) rc = -1;
        if (c->f.npos > maxpos) maxpos = c->f.npos;
    }
    for (jint i = 0; i < n; i++)
        (*jni)->DeleteLocalRef(jni, classes[i]);
    jvmti_free(classes);
    free(serials);
    w->max_positions = maxpos;
    return rc;
}

static int prepare(JNIEnv *jni, walk *w, const trace_builder *b, const heap_dump_target *t)
{
    jvmtiEnv *jvmti = hprof_jvmti;
    /* Objects heap=sites tracks are tagged with their subsite, which the
     * walk keeps in their ids (so their records carry their allocation
     * traces). */
    if (t->tag_tracked != NULL)
        t->tag_tracked(jni, w->tags);
    jclass class_class = (*jni)->FindClass(jni, "java/lang/Class");
    w->class_class = class_class ? class_serial_of_klass(class_class) : 0;
    if (class_class) (*jni)->DeleteLocalRef(jni, class_class);
    if (heap_dump_read_classes(jni, w, 1) != 0)
        return -1;

    /* Threads: their objects get their dump numbers now, so that roots on
     * their stacks can name them. */
    jint nt = 0;
    jthread *threads = NULL;
    if (jvmti_failed((*jvmti)->GetAllThreads(jvmti, &nt, &threads), "GetAllThreads"))
        return -1;
    jvmti_hold_locals(jni, nt);
    w->threads = calloc(nt ? (size_t)nt : 1, sizeof *w->threads);
    for (jint i = 0; i < nt; i++) {
        jlong tag = 0;
        if (w->threads && (*w->tags)->GetTag(w->tags, threads[i], &tag) == JVMTI_ERROR_NONE) {
            int64_t id = heap_tag_is_dump(tag) ? tag : heap_tag_dump(heap_tag_subsite(tag), ++w->next_number);
            if ((*w->tags)->SetTag(w->tags, threads[i], id) == JVMTI_ERROR_NONE) {
                note_instance_size(jni, jvmti, w, threads[i]);
                serial_t ts = thread_serial_of(threads[i]);
                w->threads[w->nthreads].number = (uint32_t)id;
                w->threads[w->nthreads].serial = ts;
                trace_builder whole = *b;
                whole.depth = 1024;      /* frame numbers of stack roots index into it */
                serial_t tr = stack_trace_of(&whole, threads[i], NULL, 0, 0, NULL);
                serial_t in_thread;
                const serial_t *frames;
                uint32_t n = 0;
                if (tr == 0 || trace_get(agent_tables(), tr, &in_thread, &frames, &n) != 0)
                    n = 0;
                w->threads[w->nthreads].trace = tr ? tr : EMPTY_TRACE_SERIAL;
                w->threads[w->nthreads].frames = n;
                w->nthreads++;
            }
        }
        (*jni)->DeleteLocalRef(jni, threads[i]);
    }
    jvmti_free(threads);
    return 0;
}

/* A new, already unlinked temporary file in the directory of `beside`
 * (its name, for messages, in name). NULL with errno set on failure. */
static FILE *open_stage_file(const char *beside, char *name, size_t size)
{
    const char *slash = strrchr(beside, '/');
    int dir_len = slash ? (int)(slash - beside) : 1;
    snprintf(name, size, "%.*s/.hprof-heap.%d.XXXXXX", dir_len, slash ? beside : ".", (int)getpid());
    int fd = mkstemp(name);
    if (fd < 0)
        return NULL;
    unlink(name);
    FILE *f = fdopen(fd, "w+");
    if (f == NULL) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

int heap_dump_write(JNIEnv *jni, const heap_dump_target *t, int depth, int lineno)
{
    walk w;
    memset(&w, 0, sizeof w);
    w.t = t;
    jvmtiEnv *own = dump_env_open();
    w.tags = own ? own : hprof_jvmti;
    jvmtiEnv *jvmti = w.tags;
    w.last_progress = time(NULL);
    trace_builder b = { .depth = depth, .lineno = lineno, .tables = agent_tables(), .resolve = resolve_method };
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (prepare(jni, &w, &b, t) != 0) {
        fprintf(stderr, "hprof: heap dump: out of memory or JVMTI failure while reading the classes\n");
        free_walk(&w);
        drop_ids(own);
        return -1;
    }
    char stage[4300];
    stage[0] = '\0';
    FILE *staged = NULL;
    if (t->format == 'b') {
        w.bin = t->binary;
        heap_dump_binary_new_records(w.bin);   /* names, classes and traces the dump refers to */
        hb_heap_begin(w.bin);
        /* Staged beside the output: classes loaded during the walk get their
         * LOAD CLASS records before it (hb_stage_begin). Without a stage
         * they follow HEAP DUMP END, where VisualVM reads them and Eclipse
         * MAT does not. */
        staged = open_stage_file(t->out_path, stage, sizeof stage);
        if (staged == NULL)
            fprintf(stderr, "hprof: heap dump: cannot create a temporary file %s (beside file=): %s; classes "
                    "loaded during the dump get their LOAD CLASS records after it\n", stage, strerror(errno));
        else if (hb_stage_begin(w.bin, staged) != 0) {
            fclose(staged);
            staged = NULL;
        }
    } else {
        /* HPROF's text header gives the counts first: stage the body in a
         * file beside the output (a heap can be larger than /tmp), created
         * exclusively and unlinked at once, so nothing is left behind even
         * if the JVM dies mid-dump. With net= the "output" is an address:
         * the working directory then. */
        w.text = open_stage_file(t->out_path, stage, sizeof stage);
        if (w.text == NULL) {
            fprintf(stderr, "hprof: heap dump: cannot create a temporary file %s (beside file=): %s\n", stage,
                    strerror(errno));
            free_walk(&w);
            drop_ids(own);
            return -1;
        }
        text_write_new_records(t->text);
        text_note_trace(t->text, EMPTY_TRACE_SERIAL);
    }

    const heap_walk_sink sink = heap_dump_sink(&w);
    heap_walk objects;
    jvmtiError err = JVMTI_ERROR_OUT_OF_MEMORY;
    if (heap_walk_init(&objects, &sink, w.max_positions) == 0)
        err = heap_walk_run(&objects, jvmti, NULL);
    if (err == JVMTI_ERROR_NONE)
        heap_dump_write_deferred(jni, &w);
    dclass *cc = heap_dump_class_of_serial(&w, w.class_class);
    uint64_t *no_values = cc ? calloc(cc->f.npos ? cc->f.npos : 1, sizeof *no_values) : NULL;
    for (uint32_t i = 0; no_values && i < w.nmirrors; i++)
        if (!w.mirrors[i].written)
            heap_dump_sink_instance(&w, &cc->f, w.class_class, w.mirrors[i].id, no_values);
    free(no_values);
    /* Classes the walk did not visit (array classes report no fields). */
    for (uint32_t i = 0; i < w.nclasses; i++)
        if (w.classes[i].loaded && !w.classes[i].dumped)
            heap_dump_write_class(&w, CLASS_SERIAL_BASE + i, &w.classes[i]);

    drop_ids(own);

    int bad = jvmti_failed(err, "FollowReferences") || w.failed || w.out_of_numbers || objects.failed;
    if (w.bin) {
        hb_heap_end(w.bin);
        if (staged)
            hb_stage_end(w.bin);
        if (w.nresolved)
            heap_dump_load_new_classes(&w);
        if (staged) {
            hb_stage_append(w.bin);
            fclose(staged);
        }
        bad |= w.bin->error != 0;
    } else {
        char date[64];
        text_format_date(time(NULL), date, sizeof date);
        FILE *out = t->text->out;
        fprintf(out, "HEAP DUMP BEGIN (%llu objects, %llu bytes) %s\n", (unsigned long long)w.objects,
                (unsigned long long)w.bytes, date);
        bad |= fflush(w.text) != 0 || ferror(w.text);
        rewind(w.text);
        char buf[65536];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, w.text)) > 0)
            if (fwrite(buf, 1, got, out) != got) { bad = 1; break; }
        fprintf(out, "HEAP DUMP END\n");
        fclose(w.text);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (w.progress_shown || bad)
        fprintf(stderr, "hprof: heap dump %s: %llu objects, %llu bytes in %.1f s\n", bad ? "FAILED" : "done",
                (unsigned long long)w.objects, (unsigned long long)w.bytes, secs);
    if (w.out_of_numbers)
        fprintf(stderr, "hprof: heap dump: more than 2^32 objects; the dump is incomplete\n");
    if (objects.mismatches)
        fprintf(stderr, "hprof: heap dump: %llu field values did not match the class layouts and were "
                "left out\n", (unsigned long long)objects.mismatches);
    if (w.left_out)
        fprintf(stderr, "hprof: heap dump: %llu values of objects of classes loaded during the dump were left "
                "out (past %zu kept, or their classes unloaded before they could be read)\n",
                (unsigned long long)w.left_out, HEAP_WALK_MAX_DEFERRED);
    heap_walk_free(&objects);
    free_walk(&w);
    return bad ? -1 : 0;
}
