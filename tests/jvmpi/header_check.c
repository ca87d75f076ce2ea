/*
 * header_check: uses every name build/include/jvmpi.h defines (compiled
 * with -Wall -Wextra -Werror -pedantic), and checks what the specification
 * requires of them: the event numbers distinct and within
 * JVMPI_MAX_EVENT_TYPE_VAL, the old names equal to the new ones, the
 * interface's functions in the specification's order. Prints "ok N" with
 * the number of names checked, or the first problem, and exits non-zero.
 */
#include <jvmpi.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define NAME(x) { #x, (long)(x) }
struct named { const char *name; long value; };

static const struct named events[] = {
    NAME(JVMPI_EVENT_METHOD_ENTRY), NAME(JVMPI_EVENT_METHOD_ENTRY2), NAME(JVMPI_EVENT_METHOD_EXIT),
    NAME(JVMPI_EVENT_OBJECT_ALLOC), NAME(JVMPI_EVENT_OBJECT_FREE), NAME(JVMPI_EVENT_OBJECT_MOVE),
    NAME(JVMPI_EVENT_COMPILED_METHOD_LOAD), NAME(JVMPI_EVENT_COMPILED_METHOD_UNLOAD),
    NAME(JVMPI_EVENT_INSTRUCTION_START), NAME(JVMPI_EVENT_THREAD_START), NAME(JVMPI_EVENT_THREAD_END),
    NAME(JVMPI_EVENT_CLASS_LOAD_HOOK), NAME(JVMPI_EVENT_HEAP_DUMP), NAME(JVMPI_EVENT_JNI_GLOBALREF_ALLOC),
    NAME(JVMPI_EVENT_JNI_GLOBALREF_FREE), NAME(JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC),
    NAME(JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE), NAME(JVMPI_EVENT_CLASS_LOAD), NAME(JVMPI_EVENT_CLASS_UNLOAD),
    NAME(JVMPI_EVENT_DATA_DUMP_REQUEST), NAME(JVMPI_EVENT_DATA_RESET_REQUEST), NAME(JVMPI_EVENT_JVM_INIT_DONE),
    NAME(JVMPI_EVENT_JVM_SHUT_DOWN), NAME(JVMPI_EVENT_ARENA_NEW), NAME(JVMPI_EVENT_ARENA_DELETE),
    NAME(JVMPI_EVENT_OBJECT_DUMP), NAME(JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER),
    NAME(JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED), NAME(JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT),
    NAME(JVMPI_EVENT_MONITOR_CONTENDED_ENTER), NAME(JVMPI_EVENT_MONITOR_CONTENDED_ENTERED),
    NAME(JVMPI_EVENT_MONITOR_CONTENDED_EXIT), NAME(JVMPI_EVENT_MONITOR_WAIT), NAME(JVMPI_EVENT_MONITOR_WAITED),
    NAME(JVMPI_EVENT_MONITOR_DUMP), NAME(JVMPI_EVENT_GC_START), NAME(JVMPI_EVENT_GC_FINISH),
};

static const struct { struct named old, now; } aliases[] = {
    { NAME(JVMPI_EVENT_OBJ_ALLOC), NAME(JVMPI_EVENT_OBJECT_ALLOC) },
    { NAME(JVMPI_EVENT_OBJ_FREE), NAME(JVMPI_EVENT_OBJECT_FREE) },
    { NAME(JVMPI_EVENT_OBJ_MOVE), NAME(JVMPI_EVENT_OBJECT_MOVE) },
    { NAME(JVMPI_EVENT_NEW_ARENA), NAME(JVMPI_EVENT_ARENA_NEW) },
    { NAME(JVMPI_EVENT_DELETE_ARENA), NAME(JVMPI_EVENT_ARENA_DELETE) },
    { NAME(JVMPI_EVENT_DUMP_DATA_REQUEST), NAME(JVMPI_EVENT_DATA_DUMP_REQUEST) },
    { NAME(JVMPI_EVENT_RESET_DATA_REQUEST), NAME(JVMPI_EVENT_DATA_RESET_REQUEST) },
};

/* Groups whose members must differ from each other. */
static const struct named versions[] = {
    NAME(JVMPI_VERSION_1), NAME(JVMPI_VERSION_1_1), NAME(JVMPI_VERSION_1_2) };
static const struct named results[] = { NAME(JVMPI_SUCCESS), NAME(JVMPI_NOT_AVAILABLE), NAME(JVMPI_FAIL) };
static const struct named thread_states[] = {
    NAME(JVMPI_THREAD_RUNNABLE), NAME(JVMPI_THREAD_MONITOR_WAIT), NAME(JVMPI_THREAD_CONDVAR_WAIT),
    NAME(JVMPI_THREAD_SUSPENDED), NAME(JVMPI_THREAD_INTERRUPTED) };
static const struct named priorities[] = {
    NAME(JVMPI_MINIMUM_PRIORITY), NAME(JVMPI_NORMAL_PRIORITY), NAME(JVMPI_MAXIMUM_PRIORITY) };
static const struct named kinds[] = {
    NAME(JVMPI_NORMAL_OBJECT), NAME(JVMPI_CLASS), NAME(JVMPI_BOOLEAN), NAME(JVMPI_CHAR), NAME(JVMPI_FLOAT),
    NAME(JVMPI_DOUBLE), NAME(JVMPI_BYTE), NAME(JVMPI_SHORT), NAME(JVMPI_INT), NAME(JVMPI_LONG) };
static const struct named monitor_records[] = { NAME(JVMPI_MONITOR_JAVA), NAME(JVMPI_MONITOR_RAW) };
static const struct named heap_records[] = {
    NAME(JVMPI_GC_ROOT_UNKNOWN), NAME(JVMPI_GC_ROOT_JNI_GLOBAL), NAME(JVMPI_GC_ROOT_JNI_LOCAL),
    NAME(JVMPI_GC_ROOT_JAVA_FRAME), NAME(JVMPI_GC_ROOT_NATIVE_STACK), NAME(JVMPI_GC_ROOT_STICKY_CLASS),
    NAME(JVMPI_GC_ROOT_THREAD_BLOCK), NAME(JVMPI_GC_ROOT_MONITOR_USED), NAME(JVMPI_GC_ROOT_THREAD_OBJ),
    NAME(JVMPI_GC_CLASS_DUMP), NAME(JVMPI_GC_INSTANCE_DUMP), NAME(JVMPI_GC_OBJ_ARRAY_DUMP),
    NAME(JVMPI_GC_PRIM_ARRAY_DUMP) };
static const struct named levels[] = { NAME(JVMPI_DUMP_LEVEL_0), NAME(JVMPI_DUMP_LEVEL_1), NAME(JVMPI_DUMP_LEVEL_2) };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
static int checked;

static int all_distinct(const struct named *v, size_t n, const char *group) {
    for (size_t i = 0; i < n; i++, checked++)
        for (size_t j = i + 1; j < n; j++)
            if (v[i].value == v[j].value) {
                printf("%s: %s and %s are both %ld\n", group, v[i].name, v[j].name, v[i].value);
                return 1;
            }
    return 0;
}

static int events_in_range(void) {
    for (size_t i = 0; i < COUNT(events); i++) {
        if (events[i].value <= 0 || events[i].value > JVMPI_MAX_EVENT_TYPE_VAL ||
            (events[i].value & JVMPI_REQUESTED_EVENT)) {
            printf("%s = %ld is outside 1..JVMPI_MAX_EVENT_TYPE_VAL\n", events[i].name, events[i].value);
            return 1;
        }
    }
    checked += 2;
    return 0;
}

static int aliases_equal(void) {
    for (size_t i = 0; i < COUNT(aliases); i++, checked++)
        if (aliases[i].old.value != aliases[i].now.value) {
            printf("%s differs from %s\n", aliases[i].old.name, aliases[i].now.name);
            return 1;
        }
    return 0;
}

/* The interface's members, in the specification's order (offsets grow). */
/* Sun's jvmpi.h, which JCov was compiled with, has lookupswitch_info's
 * pairs_total (a jint) right after chosen_pair_index. */
_Static_assert(offsetof(JVMPI_Event, u.instruction.u.lookupswitch_info.pairs_total) -
               offsetof(JVMPI_Event, u.instruction.u.lookupswitch_info.chosen_pair_index) == sizeof(jint),
               "lookupswitch_info.pairs_total where Sun's jvmpi.h has it");

#define MEMBER(m) { #m, (long)offsetof(JVMPI_Interface, m) }
static const struct named members[] = {
    MEMBER(version), MEMBER(NotifyEvent), MEMBER(EnableEvent), MEMBER(DisableEvent), MEMBER(RequestEvent),
    MEMBER(GetCallTrace), MEMBER(ProfilerExit), MEMBER(RawMonitorCreate), MEMBER(RawMonitorEnter),
    MEMBER(RawMonitorExit), MEMBER(RawMonitorWait), MEMBER(RawMonitorNotifyAll), MEMBER(RawMonitorDestroy),
    MEMBER(GetCurrentThreadCpuTime), MEMBER(SuspendThread), MEMBER(ResumeThread), MEMBER(GetThreadStatus),
    MEMBER(ThreadHasRun), MEMBER(CreateSystemThread), MEMBER(SetThreadLocalStorage),
    MEMBER(GetThreadLocalStorage), MEMBER(DisableGC), MEMBER(EnableGC), MEMBER(RunGC),
    MEMBER(GetThreadObject), MEMBER(GetMethodClass), MEMBER(jobjectID2jobject), MEMBER(jobject2jobjectID),
    MEMBER(SuspendThreadList), MEMBER(ResumeThreadList),
};

static int members_in_order(void) {
    for (size_t i = 1; i < COUNT(members); i++, checked++)
        if (members[i].value <= members[i - 1].value) {
            printf("JVMPI_Interface.%s is not after %s\n", members[i].name, members[i - 1].name);
            return 1;
        }
    return 0;
}

/* Every event structure and data type, filled through its members' names:
 * a misspelt or missing member does not compile. */
static void dummy_notify(JVMPI_Event *e) { (void)e; }
static void *dummy_malloc(unsigned int n) { (void)n; return NULL; }

static int structures(void) {
    JVMPI_Method method = { "m", "()V", 1, 2, NULL };
    JVMPI_Field field = { "f", "I" };
    JVMPI_CallFrame frame = { .lineno = 3, .method_id = method.method_id };
    JVMPI_CallTrace trace = { .env_id = NULL, .num_frames = 1, .frames = &frame };
    JVMPI_Lineno line = { .offset = 0, .lineno = 7 };
    JVMPI_HeapDumpArg dump_arg = { .heap_dump_level = JVMPI_DUMP_LEVEL_1 };
    JVMPI_RawMonitor raw = NULL;
    jobjectID id = NULL;
    jint status = 0;
    JVMPI_Event e;
    memset(&e, 0, sizeof e);
    e.event_type = JVMPI_EVENT_CLASS_LOAD | JVMPI_REQUESTED_EVENT;
    e.env_id = NULL;
    e.u.class_load.class_name = "C"; e.u.class_load.source_name = "C.java";
    e.u.class_load.num_interfaces = 0; e.u.class_load.num_methods = 1; e.u.class_load.methods = &method;
    e.u.class_load.num_static_fields = 1; e.u.class_load.statics = &field;
    e.u.class_load.num_instance_fields = 1; e.u.class_load.instances = &field;
    e.u.class_load.class_id = id;
    e.u.class_unload.class_id = id;
    e.u.class_load_hook.class_data = NULL; e.u.class_load_hook.class_data_len = 0;
    e.u.class_load_hook.new_class_data = NULL; e.u.class_load_hook.new_class_data_len = 0;
    e.u.class_load_hook.malloc_f = dummy_malloc;
    e.u.obj_alloc.arena_id = 0; e.u.obj_alloc.class_id = id; e.u.obj_alloc.is_array = JVMPI_INT;
    e.u.obj_alloc.size = 16; e.u.obj_alloc.obj_id = id;
    e.u.obj_free.obj_id = id;
    e.u.obj_move.arena_id = 0; e.u.obj_move.obj_id = id; e.u.obj_move.new_arena_id = 0;
    e.u.obj_move.new_obj_id = id;
    e.u.new_arena.arena_id = 1; e.u.new_arena.arena_name = "heap";
    e.u.delete_arena.arena_id = 1;
    e.u.thread_start.thread_name = "t"; e.u.thread_start.group_name = "g";
    e.u.thread_start.parent_name = "p"; e.u.thread_start.thread_id = id; e.u.thread_start.thread_env_id = NULL;
    e.u.method.method_id = method.method_id;
    e.u.method_entry2.method_id = method.method_id; e.u.method_entry2.obj_id = id;
    e.u.compiled_method_load.method_id = NULL; e.u.compiled_method_load.code_addr = NULL;
    e.u.compiled_method_load.code_size = 0; e.u.compiled_method_load.lineno_table_size = 1;
    e.u.compiled_method_load.lineno_table = &line;
    e.u.compiled_method_unload.method_id = NULL;
    e.u.instruction.method_id = NULL; e.u.instruction.offset = 0;
    e.u.instruction.u.if_info.is_true = JNI_TRUE;
    e.u.instruction.u.tableswitch_info.key = 1; e.u.instruction.u.tableswitch_info.low = 0;
    e.u.instruction.u.tableswitch_info.hi = 2;
    e.u.instruction.u.lookupswitch_info.chosen_pair_index = 0;
    e.u.instruction.u.lookupswitch_info.pairs_total = 3;
    e.u.instruction.u.lookupswitch_info.is_default = JNI_FALSE;
    e.u.heap_dump.dump_level = dump_arg.heap_dump_level; e.u.heap_dump.begin = NULL; e.u.heap_dump.end = NULL;
    e.u.heap_dump.num_traces = 1; e.u.heap_dump.traces = &trace;
    e.u.object_dump.data_len = 0; e.u.object_dump.data = NULL;
    e.u.monitor_dump.begin = NULL; e.u.monitor_dump.end = NULL; e.u.monitor_dump.num_traces = 1;
    e.u.monitor_dump.traces = &trace; e.u.monitor_dump.threads_status = &status;
    e.u.jni_globalref_alloc.obj_id = id; e.u.jni_globalref_alloc.ref_id = NULL;
    e.u.jni_globalref_free.ref_id = NULL;
    e.u.gc_info.used_objects = 1; e.u.gc_info.used_object_space = 2; e.u.gc_info.total_object_space = 3;
    e.u.raw_monitor.name = "r"; e.u.raw_monitor.id = raw;
    e.u.monitor.object = id;
    e.u.monitor_wait.object = id; e.u.monitor_wait.timeout = 0;
    JVMPI_Interface itf;
    memset(&itf, 0, sizeof itf);
    itf.version = JVMPI_VERSION_1_2;
    itf.NotifyEvent = dummy_notify;
    itf.NotifyEvent(&e);
    checked += 30;
    /* the union's members overlap, as the specification's union does */
    return (void *)&e.u.class_load == (void *)&e.u.gc_info && field.field_name[0] == 'f' ? 0 : 1;
}

int main(void) {
    int bad = all_distinct(events, COUNT(events), "events") || events_in_range() || aliases_equal() ||
              all_distinct(versions, COUNT(versions), "versions") ||
              all_distinct(results, COUNT(results), "results") ||
              all_distinct(thread_states, COUNT(thread_states), "thread states") ||
              all_distinct(priorities, COUNT(priorities), "priorities") ||
              all_distinct(kinds, COUNT(kinds), "object kinds") ||
              all_distinct(monitor_records, COUNT(monitor_records), "monitor dump records") ||
              all_distinct(heap_records, COUNT(heap_records), "heap dump records") ||
              all_distinct(levels, COUNT(levels), "dump levels") || members_in_order() || structures();
    if (bad) return 1;
    if (COUNT(events) != 37) {
        printf("%zu events named, the specification has 37\n", COUNT(events));
        return 1;
    }
    printf("ok %d\n", checked);
    return 0;
}
