/*
 * free_logger: OBJECT_FREE, GC_START/GC_FINISH and CLASS_UNLOAD, written to
 * the JVMPI specification alone.
 *
 * It learns the ids of class NAME's objects from OBJECT_ALLOC and counts
 * how many are freed; as the specification asks, it takes its lock at
 * GC_START and releases it at GC_FINISH, and checks that every OBJECT_FREE
 * comes between the two, on GC_START's thread. At JVM_SHUT_DOWN it calls
 * RunGC (whose events come before it returns) and writes to out=FILE:
 *   objects allocated A freed F misplaced M
 *   gc pairs P unbalanced U bad_statistics B
 *   class GONE loaded L unloaded U           (GONE: the class named by gone=)
 *   heap_dump0 SUCCESS|FAILED live K kinds OK|BAD freed_present F total MANY|FEW
 *                                           a HEAP_DUMP at level 0 after that:
 *                                           records of NAME's objects seen
 *                                           alive, any of them not a normal
 *                                           object, freed ones in it, all records
 *   heap_dump2 SUCCESS|...                  RequestEvent(HEAP_DUMP, NULL): level 2
 *                                           (heap_reader reads those)
 *   lookup live L right R wrong W freed_refused F freed_answered A
 *                                           each of NAME's objects by its id
 *                                           after the collections: live ones
 *                                           (not freed) must come back as
 *                                           themselves (jobjectID2jobject's
 *                                           object has that id again, and
 *                                           RequestEvent(OBJECT_ALLOC) answers
 *                                           that id, class and size); freed
 *                                           ones must be refused (NULL, JVMPI_FAIL)
 * Options: out=FILE,class=NAME,gone=NAME
 */
#include <jvmpi.h>

#include "agent_support.h"

#include <stdio.h>
#include <string.h>

#define MAX_OBJECTS 4096

static JVMPI_Interface *jvmpi;
static JavaVM *vm;
static JVMPI_RawMonitor lock;
static FILE *out;
static char class_name[256], gone_name[256];
static jobjectID watched, gone;
static jobjectID objects[MAX_OBJECTS];
static jint sizes[MAX_OBJECTS];
static JVMPI_Event answer;       /* the last requested OBJECT_ALLOC */
static long answers;
static long n_objects, freed, misplaced, pairs, unbalanced, bad_statistics, gone_loads, gone_unloads;
static int in_gc;
static jobjectID freed_ids[MAX_OBJECTS];
static long n_freed_ids;
static long dump_live = -1, dump_bad_kind, dump_freed_present, dump_total;
static JNIEnv *gc_thread;

static int is_watched(jobjectID id) {
    for (long i = 0; i < n_objects && i < MAX_OBJECTS; i++)
        if (objects[i] == id) return 1;
    return 0;
}

static void class_load(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    if (strcmp(e->u.class_load.class_name, class_name) == 0) watched = e->u.class_load.class_id;
    if (strcmp(e->u.class_load.class_name, gone_name) == 0) { gone = e->u.class_load.class_id; gone_loads++; }
    jvmpi->RawMonitorExit(lock);
}

static void object_alloc(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    if (watched != NULL && e->u.obj_alloc.class_id == watched && e->u.obj_alloc.is_array == JVMPI_NORMAL_OBJECT) {
        if (n_objects < MAX_OBJECTS) {
            objects[n_objects] = e->u.obj_alloc.obj_id;
            sizes[n_objects] = e->u.obj_alloc.size;
        }
        n_objects++;
    }
    jvmpi->RawMonitorExit(lock);
}

/* Thread suspended mode: no blocking call, no malloc. The lock is ours already. */
static void object_free(JVMPI_Event *e) {
    if (!in_gc || e->env_id != gc_thread) misplaced++;
    if (is_watched(e->u.obj_free.obj_id)) {
        if (n_freed_ids < MAX_OBJECTS) freed_ids[n_freed_ids++] = e->u.obj_free.obj_id;
        freed++;
    }
}

static void gc_start(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    if (in_gc) unbalanced++;
    in_gc = 1;
    gc_thread = e->env_id;
}

static void gc_finish(JVMPI_Event *e) {
    if (!in_gc || e->env_id != gc_thread) unbalanced++;
    in_gc = 0;
    pairs++;
    if (e->u.gc_info.used_objects <= 0 || e->u.gc_info.used_object_space <= 0 ||
        e->u.gc_info.total_object_space < e->u.gc_info.used_object_space)
        bad_statistics++;
    jvmpi->RawMonitorExit(lock);
}

static void class_unload(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    if (gone != NULL && e->u.class_unload.class_id == gone) gone_unloads++;
    jvmpi->RawMonitorExit(lock);
}

static int was_freed(jobjectID id) {
    for (long i = 0; i < n_freed_ids; i++)
        if (freed_ids[i] == id) return 1;
    return 0;
}

/* Records: u1 kind, then the id as a native pointer. */
static void heap_dump(JVMPI_Event *e) {
    if (e->u.heap_dump.dump_level != JVMPI_DUMP_LEVEL_0) return;
    dump_live = dump_bad_kind = dump_freed_present = dump_total = 0;
    for (char *p = e->u.heap_dump.begin; p + 1 + sizeof(jobjectID) <= e->u.heap_dump.end; p += 1 + sizeof(jobjectID)) {
        unsigned char kind = (unsigned char)p[0];
        jobjectID id;
        memcpy(&id, p + 1, sizeof id);
        dump_total++;
        if (is_watched(id)) {
            dump_live++;
            if (kind != JVMPI_NORMAL_OBJECT) dump_bad_kind++;
        }
        if (was_freed(id)) dump_freed_present++;
    }
}

/* Each watched object by its id, after the collections (RunGC's too). */
static void look_up(void) {
    JNIEnv *jni = NULL;
    long live = 0, right = 0, wrong = 0, freed_refused = 0, freed_answered = 0;
    if ((*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_2) != JNI_OK) jni = NULL;
    for (long i = 0; i < n_objects && i < MAX_OBJECTS; i++) {
        jobjectID id = objects[i];
        long before = answers;
        jint requested = jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, id);
        jobject object = jvmpi->jobjectID2jobject(id);
        int same = object != NULL && jvmpi->jobject2jobjectID(object) == id;   /* that very object */
        if (object != NULL && jni != NULL) (*jni)->DeleteLocalRef(jni, object);
        if (was_freed(id)) {
            if (requested == JVMPI_FAIL && answers == before && object == NULL) freed_refused++;
            else freed_answered++;
            continue;
        }
        live++;
        if (requested == JVMPI_SUCCESS && answers == before + 1 && answer.u.obj_alloc.obj_id == id &&
            answer.u.obj_alloc.class_id == watched && answer.u.obj_alloc.size == sizes[i] && same)
            right++;
        else
            wrong++;
    }
    fprintf(out, "lookup live %ld right %ld wrong %ld freed_refused %ld freed_answered %ld\n", live, right, wrong,
            freed_refused, freed_answered);
}

static void shut_down(void) {
    jvmpi->RunGC();
    JVMPI_HeapDumpArg level0 = { JVMPI_DUMP_LEVEL_0 };
    jvmpi->DisableGC();
    jint dumped = jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &level0);
    jint level2 = jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, NULL);
    jvmpi->EnableGC();
    jvmpi->RawMonitorEnter(lock);
    fprintf(out, "objects allocated %ld freed %ld misplaced %ld\n", n_objects, freed, misplaced);
    fprintf(out, "gc pairs %s unbalanced %ld bad_statistics %ld\n", pairs >= 3 ? "SOME" : "FEW", unbalanced,
            bad_statistics);
    fprintf(out, "class %s loaded %ld unloaded %ld\n", gone_name, gone_loads, gone_unloads);
    fprintf(out, "heap_dump0 %s live %ld kinds %s freed_present %ld total %s\n",
            dumped == JVMPI_SUCCESS ? "SUCCESS" : "FAILED", dump_live, dump_bad_kind ? "BAD" : "OK",
            dump_freed_present, dump_total > 1000 ? "MANY" : "FEW");
    fprintf(out, "heap_dump2 %s\n", level2 == JVMPI_SUCCESS ? "SUCCESS" : level2 == JVMPI_NOT_AVAILABLE ? "NOT_AVAILABLE" : "FAILED");
    look_up();
    jvmpi->RunGC();                     /* the objects move (a copying GC); their ids stay */
    look_up();                          /* asked for again: found as the layer noted them */
    fflush(out);
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_CLASS_LOAD:    class_load(e); break;
    case JVMPI_EVENT_OBJECT_ALLOC:  object_alloc(e); break;
    case JVMPI_EVENT_OBJECT_FREE:   object_free(e); break;
    case JVMPI_EVENT_GC_START:      gc_start(e); break;
    case JVMPI_EVENT_GC_FINISH:     gc_finish(e); break;
    case JVMPI_EVENT_CLASS_UNLOAD:  class_unload(e); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: shut_down(); break;
    case JVMPI_EVENT_HEAP_DUMP | JVMPI_REQUESTED_EVENT: heap_dump(e); break;
    case JVMPI_EVENT_OBJECT_ALLOC | JVMPI_REQUESTED_EVENT: answer = *e; answers++; break;
    default: break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    char path[1024];
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) return JNI_ERR;
    vm = jvm;
    if (options == NULL || !agent_option(options, "out=", path, sizeof path) ||
        !agent_option(options, "class=", class_name, sizeof class_name) ||
        !agent_option(options, "gone=", gone_name, sizeof gone_name) || (out = fopen(path, "w")) == NULL) {
        fprintf(stderr, "free_logger: options out=FILE,class=NAME,gone=NAME\n");
        return JNI_ERR;
    }
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_free_logger");
    static const jint events[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_OBJECT_ALLOC, JVMPI_EVENT_OBJECT_FREE,
                                   JVMPI_EVENT_GC_START, JVMPI_EVENT_GC_FINISH, JVMPI_EVENT_CLASS_UNLOAD,
                                   JVMPI_EVENT_JVM_SHUT_DOWN };
    return agent_enable(jvmpi, events, AGENT_COUNT(events));
}
