/*
 * stack_profile: whole stacks (stack_table.h) into a profile (profile.h),
 * the step every collector's snapshot shares: frames named from the method
 * table (class, method, signature, source file, line), the thread's name
 * when the stack is per thread (thread=y).
 *
 * Pure C, no JVMTI.
 */
#ifndef HPROF_STACK_PROFILE_H
#define HPROF_STACK_PROFILE_H

#include <stdint.h>

#include "../profile/profile.h"
#include "stack_table.h"

/* Add `values` (p's nvalues of them) to p's sample of stack `id`, with
 * `leaf` (NULL: none) as a pseudo frame above the stack's own: the class an
 * allocation made ("byte[]"), the class of a contended lock. A stack that
 * could not be kept (id 0: the stack table was full) is the single frame
 * [unwalkable].stack_table_full, so that totals still agree with the
 * report. 0, or -1 when out of memory. */
int stack_profile_add(profile *p, stack_id id, const char *leaf, const int64_t *values);

#endif
