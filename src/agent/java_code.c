/* java_code.c: see java_code.h. */
#include "java_code.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "../cpu/code_map.h"
#include "events.h"
#include "jvmti_support.h"

/* The map is made once and lives as long as the process: a sample drained
 * after a stop may still look an address up. Global: the JVMTI events that
 * fill it get no user data. */
static struct {
    code_map *map;
    pthread_mutex_t lock;
    int users;
    atomic_int on; /* events update the map */
} java_code = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void JNICALL on_compiled_method_load(jvmtiEnv *jvmti, jmethodID method, jint code_size,
                                            const void *code_addr, jint map_length,
                                            const jvmtiAddrLocationMap *map, const void *compile_info)
{
    (void)jvmti; (void)map_length; (void)map; (void)compile_info;
    if (atomic_load(&java_code.on) && code_size > 0)
        code_map_add(java_code.map, (uint64_t)(uintptr_t)code_addr, (uint64_t)code_size, CODE_COMPILED,
                     (uint64_t)(uintptr_t)method);
}

static void JNICALL on_compiled_method_unload(jvmtiEnv *jvmti, jmethodID method, const void *code_addr)
{
    (void)jvmti; (void)method;
    if (atomic_load(&java_code.on))
        code_map_remove(java_code.map, (uint64_t)(uintptr_t)code_addr);
}

/* HotSpot names the template interpreter's code "Interpreter"; the other
 * generated code (stubs, adapters) is of no Java frame's kind. */
static void JNICALL on_dynamic_code(jvmtiEnv *jvmti, const char *name, const void *address, jint length)
{
    (void)jvmti;
    if (atomic_load(&java_code.on) && name != NULL && strcmp(name, "Interpreter") == 0 && length > 0)
        code_map_add(java_code.map, (uint64_t)(uintptr_t)address, (uint64_t)length, CODE_INTERPRETER, 0);
}

int java_code_subscribe(void)
{
    return events_subscribe(JVMTI_EVENT_COMPILED_METHOD_LOAD, EVENT_FN(on_compiled_method_load)) |
           events_subscribe(JVMTI_EVENT_COMPILED_METHOD_UNLOAD, EVENT_FN(on_compiled_method_unload)) |
           events_subscribe(JVMTI_EVENT_DYNAMIC_CODE_GENERATED, EVENT_FN(on_dynamic_code));
}

static int can_see_compiled_code(jvmtiEnv *jvmti)
{
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    return (*jvmti)->GetCapabilities(jvmti, &caps) == JVMTI_ERROR_NONE &&
           caps.can_generate_compiled_method_load_events;
}

int java_code_want(jvmtiEnv *jvmti)
{
    if (!can_see_compiled_code(jvmti))
        return -1;
    pthread_mutex_lock(&java_code.lock);
    int rc = 0;
    if (java_code.users++ == 0) {
        if (java_code.map == NULL)
            java_code.map = code_map_new();
        else
            code_map_clear(java_code.map);     /* unloads went unseen while off */
        if (java_code.map == NULL)
            rc = -1;
        else {
            atomic_store(&java_code.on, 1);
            rc = events_want(jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD) |
                 events_want(jvmti, JVMTI_EVENT_COMPILED_METHOD_UNLOAD) |
                 events_want(jvmti, JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
            /* What was compiled and generated before now (all of it at an
             * attach; the interpreter even at start-up, made before VMInit). */
            if (rc == 0 &&
                (jvmti_failed((*jvmti)->GenerateEvents(jvmti, JVMTI_EVENT_DYNAMIC_CODE_GENERATED), "GenerateEvents") ||
                 jvmti_failed((*jvmti)->GenerateEvents(jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD), "GenerateEvents")))
                rc = -1;
            else if (rc == 0)
                rc = 1;
        }
    }
    pthread_mutex_unlock(&java_code.lock);
    return rc;
}

void java_code_unwant(jvmtiEnv *jvmti)
{
    pthread_mutex_lock(&java_code.lock);
    if (java_code.users > 0 && --java_code.users == 0 && can_see_compiled_code(jvmti)) {
        events_unwant(jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD);
        events_unwant(jvmti, JVMTI_EVENT_COMPILED_METHOD_UNLOAD);
        events_unwant(jvmti, JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
        atomic_store(&java_code.on, 0);
    }
    pthread_mutex_unlock(&java_code.lock);
}

int java_code_find(uint64_t pc, uint64_t *method, void *context)
{
    (void)context;
    code_map *map = java_code.map;
    return map != NULL && atomic_load(&java_code.on) ? code_map_find(map, pc, method) : CODE_NONE;
}
