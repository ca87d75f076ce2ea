/*
 * hidden_names: how the agent, the readers and the comparisons name hidden
 * classes (lambdas, LambdaForms) so that two runs agree.
 *
 * Pure C. In core/ because the tables intern class names this way and the
 * profile model and the analyses read them (both depend on core/, never
 * the other way).
 */
#ifndef HPROF_HIDDEN_NAMES_H
#define HPROF_HIDDEN_NAMES_H

#include <stddef.h>

/* name (len bytes, NUL-terminated) without the addresses HotSpot puts in
 * hidden classes' names (Foo$$Lambda.0x0000000095042210.run, LambdaForm$MH
 * .0x....invoke: "Name/0x..." in the JVM), and without JDK 17's lambda
 * counter (Foo$$Lambda$14.0x... -> Foo$$Lambda), which differ from run to
 * run: how the agent names hidden classes' frames, and what comparisons of
 * two runs match frames by. In place; the new length. */
size_t hidden_name_drop_addresses(char *name, size_t len);

#endif
