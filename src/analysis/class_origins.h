/*
 * class_origins: why classes were loaded, from a file's class records
 * (hprof_data's classes and loaders): `hprof report`'s classes by loader
 * and by loading site.
 *
 * A loader is named by its kind: "bootstrap" (no loader object), "platform"
 * and "app" (the JDK's ClassLoaders$PlatformClassLoader and
 * $AppClassLoader), or for any other loader the class of its object
 * ("custom: com.example.PluginLoader"; two loaders of one class are one
 * row). A loading site is the top frame of the trace that loaded the class.
 * Hidden classes are named by the class that made them: a lambda
 * (Foo$$Lambda.0x..., Foo$$Lambda$14.0x... on JDK 17) by Foo, the class
 * before "$$Lambda"; another hidden class by its name without the address
 * (java.lang.invoke.LambdaForm$MH). Their names are grouped in the lists
 * ("3 lambdas of Foo").
 *
 * No size: JVMTI tells no class's metaspace, and no record of the file does.
 *
 * Pure C, no JVMTI.
 */
#ifndef HPROF_CLASS_ORIGINS_H
#define HPROF_CLASS_ORIGINS_H

#include "../reader/hprof_data.h"
#include "table.h"

/* Class names listed per row of the loading-site table; more are counted. */
#define CLASS_ORIGINS_NAMES 5

/* The tables (by loader; by loader and loading site, the top `top` rows;
 * hidden classes by the class that made them) into out[*n...], at most max
 * in all. None when the file has no class records. 0, or -1 when out of
 * memory. */
int class_origin_tables(const hprof_data *d, int top, table **out, int max, int *n);

/* The class that made a hidden class, from its name, into buf: "Foo" for a
 * lambda Foo$$Lambda..., the name without its address for another hidden
 * class; 0 when the name is not a hidden class's. *lambda says which. */
int class_origin_maker(const char *name, char *buf, size_t size, int *lambda);

#endif
