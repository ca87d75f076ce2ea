/* async_trace.c: see async_trace.h. */
#include "async_trace.h"

#include <dlfcn.h>
#include <stdatomic.h>

/* The look-up's answer. Two threads may look it up at once: both find the
 * same address. */
static struct {
    _Atomic(asgct_fn) bound;
    atomic_int        looked_up;   /* bound holds the answer (release/acquire) */
} lookup;

asgct_fn async_trace_function(const char **why)
{
    if (!atomic_load_explicit(&lookup.looked_up, memory_order_acquire)) {
        asgct_fn found = (asgct_fn)dlsym(RTLD_DEFAULT, "AsyncGetCallTrace");
        if (found == NULL && why != NULL) {
            const char *error = dlerror();
            *why = error != NULL ? error : "AsyncGetCallTrace: symbol not found";
        }
        atomic_store_explicit(&lookup.bound, found, memory_order_relaxed);
        atomic_store_explicit(&lookup.looked_up, 1, memory_order_release);
    } else if (atomic_load_explicit(&lookup.bound, memory_order_relaxed) == NULL && why != NULL) {
        *why = "AsyncGetCallTrace: symbol not found";
    }
    return atomic_load_explicit(&lookup.bound, memory_order_relaxed);
}
