/* class_origins: see class_origins.h. */
#include "class_origins.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/hidden_names.h"
#include "../core/tables.h"
#include "../profile/profile.h"

#define APP_LOADER      "jdk.internal.loader.ClassLoaders$AppClassLoader"
#define PLATFORM_LOADER "jdk.internal.loader.ClassLoaders$PlatformClassLoader"

int class_origin_maker(const char *name, char *buf, size_t size, int *lambda)
{
    size_t len = strlen(name);
    if (size == 0 || len >= size)
        return 0;
    memcpy(buf, name, len + 1);
    /* HotSpot's own dumps name hidden classes as the JVM does inside:
     * Foo$$Lambda+0x0000000800c01000. */
    for (char *plus = strstr(buf, "+0x"); plus; plus = strstr(plus + 1, "+0x"))
        *plus = '.';
    if (hidden_name_drop_addresses(buf, len) == len)
        return 0;                              /* no address: not a hidden class */
    char *mark = strstr(buf, "$$Lambda");
    *lambda = mark != NULL && mark != buf;
    if (*lambda)
        *mark = '\0';
    return 1;
}

/* One class as the tables see it. */
typedef struct origin {
    const char *loader;          /* the loader's label (loader_label) */
    uint32_t    trace;           /* 0: none recorded */
    const char *name;
    const char *maker;           /* hidden classes: the class that made it; else NULL */
    int         lambda;
} origin;

static const char *loader_label(const hprof_data *d, const hd_index *loaders, const hd_class *c,
                                string_store *labels)
{
    if (!c->loader_known)
        return "unknown (no heap dump)";
    if (c->loader == 0)
        return "bootstrap";
    uint32_t at;
    char buf[1200];
    if (hd_map_get(loaders, c->loader, &at) != 0)
        snprintf(buf, sizeof buf, "loader 0x%llx (its object is not in the dump)", (unsigned long long)c->loader);
    else if (strcmp(d->loaders[at].class_name, APP_LOADER) == 0)
        return "app";
    else if (strcmp(d->loaders[at].class_name, PLATFORM_LOADER) == 0)
        return "platform";
    else
        snprintf(buf, sizeof buf, "custom: %s", d->loaders[at].class_name);
    return string_store_add(labels, buf, strlen(buf));
}

static int by_loader_then_trace(const void *a, const void *b)
{
    const origin *x = a, *y = b;
    int c = strcmp(x->loader, y->loader);
    if (c)
        return c;
    if (x->trace != y->trace)
        return x->trace < y->trace ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_maker(const void *a, const void *b)
{
    const origin *x = a, *y = b;
    int c = strcmp(x->maker ? x->maker : "", y->maker ? y->maker : "");
    if (c)
        return c;
    if (x->lambda != y->lambda)
        return x->lambda ? -1 : 1;
    return strcmp(x->loader, y->loader);
}

/* A run of classes that share a key, and how many they are. */
typedef struct group {
    uint32_t first, count;
} group;

static int by_count(const void *a, const void *b)
{
    const group *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* The runs of o[0..n) that cmp calls equal, largest first; NULL when out of memory. */
static group *groups_of(const origin *o, uint32_t n, int (*same)(const origin *, const origin *), uint32_t *ngroups)
{
    group *g = malloc((n ? n : 1) * sizeof *g);
    uint32_t k = 0;
    for (uint32_t i = 0; g && i < n; i++) {
        if (k && same(&o[g[k - 1].first], &o[i]))
            g[k - 1].count++;
        else
            g[k++] = (group){ i, 1 };
    }
    if (g)
        qsort(g, k, sizeof *g, by_count);
    *ngroups = k;
    return g;
}

static int same_loader(const origin *a, const origin *b) { return strcmp(a->loader, b->loader) == 0; }
static int same_site(const origin *a, const origin *b) { return same_loader(a, b) && a->trace == b->trace; }
static int same_maker(const origin *a, const origin *b)
{
    return a->lambda == b->lambda && strcmp(a->maker, b->maker) == 0 && same_loader(a, b);
}

/* "LazyLoads.first(LazyLoads.java:48)", the top frame of a trace; a note
 * for a class with none. */
static void site_of(const hprof_data *d, uint32_t trace, char *buf, size_t size)
{
    const hd_trace *t = trace ? hd_find_trace(d, trace) : NULL;
    if (t == NULL || t->depth == 0) {
        snprintf(buf, size, "(no trace: loaded before the agent started, or by the JVM itself)");
        return;
    }
    const hd_frame *f = &d->frames[t->first];
    if (f->line > 0)
        snprintf(buf, size, "%s.%s(%s:%d)", f->class_name, f->method, f->file[0] ? f->file : "?", (int)f->line);
    else
        snprintf(buf, size, "%s.%s(%s)", f->class_name, f->method,
                 f->line == PROFILE_LINE_NATIVE ? "Native method" : "Unknown line");
}

/* The names of a site's classes: up to CLASS_ORIGINS_NAMES named, hidden
 * ones counted by the class that made them, then how many more. */
static void names_of(const origin *o, uint32_t n, char *buf, size_t size)
{
    size_t used = 0;
    uint32_t listed = 0, shown = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && listed < CLASS_ORIGINS_NAMES; i++) {
        if (o[i].maker) {
            int first = 1;                         /* the first of its maker here: counts them all */
            for (uint32_t j = 0; j < i && first; j++)
                first = !(o[j].maker && o[j].lambda == o[i].lambda && strcmp(o[j].maker, o[i].maker) == 0);
            if (!first)
                continue;
            uint32_t same = 0;
            for (uint32_t j = i; j < n; j++)
                same += o[j].maker && o[j].lambda == o[i].lambda && strcmp(o[j].maker, o[i].maker) == 0;
            used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%u %s %s", listed ? ", " : "",
                                     same, o[i].lambda ? (same == 1 ? "lambda of" : "lambdas of")
                                                       : (same == 1 ? "hidden class" : "hidden classes"),
                                     o[i].maker);
            shown += same;
        } else {
            used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s", listed ? ", " : "",
                                     o[i].name);
            shown++;
        }
        listed++;
    }
    if (shown < n && used < size)
        snprintf(buf + used, size - used, ", and %u more", n - shown);
}

static table *loaders_table(const origin *o, uint32_t n, const group *g, uint32_t ng)
{
    const char *cols[] = { "loader", ">classes", ">with a loading trace", ">hidden" };
    table *t = table_new("Classes by loader", 4, cols);
    for (uint32_t i = 0; t && i < ng; i++) {
        uint32_t traced = 0, hidden = 0;
        for (uint32_t j = g[i].first; j < g[i].first + g[i].count; j++) {
            traced += o[j].trace != 0;
            hidden += o[j].maker != NULL;
        }
        table_add(t, "%s\t%u\t%u\t%u", o[g[i].first].loader, g[i].count, traced, hidden);
    }
    (void)n;
    return t;
}

static table *sites_table(const hprof_data *d, const origin *o, const group *g, uint32_t ng, int top)
{
    const char *cols[] = { ">classes", "loader", "loading site (top frame of its trace)", "classes" };
    table *t = table_new("Classes by loader and loading site", 4, cols);
    for (uint32_t i = 0; t && i < ng && (int)i < top; i++) {
        char site[1200], names[2400];
        site_of(d, o[g[i].first].trace, site, sizeof site);
        names_of(o + g[i].first, g[i].count, names, sizeof names);
        table_add(t, "%u\t%s\t%s\t%s", g[i].count, o[g[i].first].loader, site, names);
    }
    return t;
}

static table *makers_table(const origin *o, const group *g, uint32_t ng, int top)
{
    const char *cols[] = { ">classes", "made by", "kind", "loader" };
    table *t = table_new("Hidden classes by the class that made them", 4, cols);
    for (uint32_t i = 0; t && i < ng && (int)i < top; i++)
        table_add(t, "%u\t%s\t%s\t%s", g[i].count, o[g[i].first].maker, o[g[i].first].lambda ? "lambdas" : "hidden",
                  o[g[i].first].loader);
    return t;
}

/* The classes as origins, their labels and makers' names in store. */
static origin *origins_of(const hprof_data *d, string_store *store)
{
    hd_index *loaders = NULL;
    origin *o = malloc((d->nclasses ? d->nclasses : 1) * sizeof *o);
    for (uint32_t i = 0; o && i < d->nloaders; i++)
        if (hd_map_put(&loaders, d->loaders[i].id, i) != 0) {
            free(o);
            o = NULL;
        }
    for (uint32_t i = 0; o && i < d->nclasses; i++) {
        const hd_class *c = &d->classes[i];
        char maker[1024];
        int lambda = 0;
        /* No trace, or an empty one (300000 in ours; HotSpot's dumps name
         * one empty trace for every class). */
        const hd_trace *t = c->trace ? hd_find_trace(d, c->trace) : NULL;
        o[i] = (origin){ loader_label(d, loaders, c, store), t && t->depth ? c->trace : 0, c->name, NULL, 0 };
        if (class_origin_maker(c->name, maker, sizeof maker, &lambda)) {
            o[i].maker = string_store_add(store, maker, strlen(maker));
            o[i].lambda = lambda;
        }
        if (o[i].loader == NULL || (lambda && o[i].maker == NULL)) {
            free(o);
            o = NULL;
        }
    }
    hd_map_free(loaders);
    return o;
}

int class_origin_tables(const hprof_data *d, int top, table **out, int max, int *n)
{
    if (d->nclasses == 0 || *n + 3 > max)
        return 0;
    int from = *n;
    string_store *store = string_store_new();
    origin *o = store ? origins_of(d, store) : NULL;
    uint32_t nl = 0, ns = 0, nm = 0, nhidden = 0;
    group *by_loader = NULL, *by_site = NULL, *by_maker_g = NULL;
    int rc = -1;
    if (o == NULL)
        goto done;
    qsort(o, d->nclasses, sizeof *o, by_loader_then_trace);
    by_loader = groups_of(o, d->nclasses, same_loader, &nl);
    by_site = groups_of(o, d->nclasses, same_site, &ns);
    if (by_loader == NULL || by_site == NULL)
        goto done;
    out[(*n)++] = loaders_table(o, d->nclasses, by_loader, nl);
    out[(*n)++] = sites_table(d, o, by_site, ns, top);
    /* The hidden classes alone, by their makers. */
    for (uint32_t i = 0; i < d->nclasses; i++)
        if (o[i].maker)
            o[nhidden++] = o[i];
    qsort(o, nhidden, sizeof *o, by_maker);
    by_maker_g = groups_of(o, nhidden, same_maker, &nm);
    if (by_maker_g == NULL)
        goto done;
    if (nm)
        out[(*n)++] = makers_table(o, by_maker_g, nm, top);
    rc = 0;
done:
    for (int i = from, kept = from; i < *n; i++) {   /* a table not made (out of memory) is left out */
        if (out[i])
            out[kept++] = out[i];
        if (i == *n - 1)
            *n = kept;
    }
    free(by_loader);
    free(by_site);
    free(by_maker_g);
    free(o);
    string_store_free(store);
    return rc;
}
