/*
 * stack_profile: whole stacks (stack_table.h) into a profile (profile.h),
 * the step every collector's snapshot shares: frames named from the method
 * table (class, method, signature, source file, line), the thread's name
 * when the stack is per thread (thread=y), from the tables handed in.
 *
 * Pure C, no JVMTI.
 */
#ifndef HPROF_STACK_PROFILE_H
#define HPROF_STACK_PROFILE_H

#include <stdint.h>

#include "../profile/profile.h"
#include "../core/stack_table.h"

/* Add `values` (p's nvalues of them) to p's sample of stack `id`, with
 * `leaf` (NULL: none) as a pseudo frame above the stack's own: the class an
 * allocation made ("byte[]"), the class of a contended lock; `leaf_note`
 * (NULL: none) is that frame's signature, what kind of row it is where a
 * writer needs to know (monitor=y: "park" for a park, which the JFR writer
 * writes as jdk.ThreadPark; pprof shows it in the system name). A stack that
 * could not be kept (id 0: the stack table was full) is the single frame
 * [unwalkable].stack_table_full, so that totals still agree with the
 * report. 0, or -1 when out of memory. */
int stack_profile_add(profile_tables *tables, profile *p, stack_id id, const char *leaf, const char *leaf_note, const int64_t *values);

/* The frames of stack `id` as p's frame ids, leaf first, into ids (room for
 * STACK_MAX_FRAMES), and its thread into *thread when the stack is per
 * thread (thread->name "" otherwise); a stack that could not be kept is
 * [unwalkable].stack_table_full, as above. The number of frames, or -1
 * when out of memory. */
int stack_profile_frames(profile_tables *tables, profile *p, stack_id id, uint32_t *ids, thread_info *thread);

/* A collector's rows as a new profile: row(rows, i, ...) gives row i's
 * stack, leaf and leaf note (or NULL: left as they are) and values; `shown`
 * is the value flame graphs and collapsed stacks show. NULL when out of
 * memory. */
typedef void (*stack_row_fn)(const void *rows, uint32_t i, stack_id *stack, const char **leaf,
                             const char **leaf_note, int64_t *values);
profile *stack_profile_of_rows(profile_tables *tables, const char *title, const profile_value_type *types, uint32_t nvalues,
                               uint32_t shown, const void *rows, uint32_t n, stack_row_fn row);

/* A profile a dump made from the rows it wrote, kept until the snapshot
 * takes it, so that both count the same while threads go on counting:
 * keep replaces (and frees) what was kept, take hands it over (NULL if
 * none). */
void     stack_profile_keep(profile **slot, profile *p);
profile *stack_profile_take(profile **slot);

#endif
