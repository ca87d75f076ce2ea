/* native_libs.c: see native_libs.h. */
#include "native_libs.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../native/demangle.h"
#include "../native/elf_symbols.h"

struct native_lib {
    uintptr_t   text_lo, text_hi;  /* the executable segments' span, runtime addresses */
    uintptr_t   bias;              /* runtime address = ELF vaddr + bias (dlpi_addr) */
    atomic_int  gone;              /* unloaded: the handler passes it by */
    int         kind;              /* NATIVE_KIND_* */
    char       *path;
    const char *base;              /* the path's last component */
    elf_symbols symbols;
    frame_table frames;
};

/* The loaded objects. Appended on the agent thread under `lock`, read by
 * the handler through `count` (release/acquire): an entry is complete
 * before it is counted. Global: the signal handler gets no user data. */
static struct {
    native_lib        *libs[NATIVE_LIBS_MAX];
    atomic_int         count;
    pthread_mutex_t    lock;
    unsigned long long seen_adds, seen_subs;   /* the link map's counters at the last rescan */
} libraries = { .lock = PTHREAD_MUTEX_INITIALIZER, .seen_adds = ~0ull, .seen_subs = ~0ull };

const native_lib *native_libs_find(uintptr_t pc)
{
    int n = atomic_load_explicit(&libraries.count, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        const native_lib *lib = libraries.libs[i];
        if (pc >= lib->text_lo && pc < lib->text_hi && !atomic_load_explicit(&lib->gone, memory_order_relaxed))
            return lib;
    }
    return NULL;
}

const frame_rule *native_lib_rule(const native_lib *lib, uintptr_t pc)
{
    return frame_table_find(&lib->frames, (uint64_t)(pc - lib->bias));
}

/* ------------------------------------------------------------ loading */

/* One object as dl_iterate_phdr shows it, copied out of the callback so that
 * files are read without the loader's lock held. */
typedef struct loaded_object {
    char      path[PATH_MAX];
    uintptr_t bias, text_lo, text_hi;
    int       vdso;
} loaded_object;

typedef struct object_list {
    loaded_object *items;
    size_t         n, cap;
    unsigned long long adds, subs;
} object_list;

static int collect_object(struct dl_phdr_info *info, size_t size, void *data)
{
    object_list *list = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        list->adds = info->dlpi_adds;
        list->subs = info->dlpi_subs;
    }
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < lo)
            lo = start;
        if (start + ph->p_memsz > hi)
            hi = start + ph->p_memsz;
    }
    if (hi <= lo)
        return 0;                  /* no code */
    if (list->n == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 64;
        loaded_object *items = realloc(list->items, cap * sizeof *items);
        if (items == NULL)
            return 1;              /* out of memory: what was listed is used */
        list->items = items;
        list->cap = cap;
    }
    loaded_object *o = &list->items[list->n++];
    memset(o, 0, sizeof *o);
    o->bias = info->dlpi_addr;
    o->text_lo = lo;
    o->text_hi = hi;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    o->vdso = strstr(name, "linux-vdso") != NULL || strstr(name, "linux-gate") != NULL;
    if (name[0] == '\0') {         /* the main program: the java launcher */
        ssize_t len = readlink("/proc/self/exe", o->path, sizeof o->path - 1);
        o->path[len > 0 ? len : 0] = '\0';
    } else {
        snprintf(o->path, sizeof o->path, "%s", name);
    }
    return 0;
}

/* The ELF bytes of a file, mapped read-only; NULL if it cannot be read. */
static const uint8_t *map_file(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    void *bytes = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        bytes = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (bytes == MAP_FAILED)
        return NULL;
    *size = (size_t)st.st_size;
    return bytes;
}

/* The vDSO is no file: its ELF image is mapped whole at AT_SYSINFO_EHDR. */
static const uint8_t *vdso_image(size_t *size)
{
    const uint8_t *base = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
    if (base == NULL || memcmp(base, ELFMAG, SELFMAG) != 0)
        return NULL;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
    size_t end = (size_t)eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > end)
            end = ph[i].p_offset + ph[i].p_filesz;
    *size = end;
    return base;
}

/* Symbols from separate debug info where the object itself has only its
 * exported names (.dynsym): /usr/lib/debug, by build id or debuglink. */
static void load_debug_symbols(native_lib *lib, const uint8_t *bytes, size_t size)
{
    char build_id[128], link[256];
    elf_build_id(bytes, size, build_id, sizeof build_id);
    elf_debuglink(bytes, size, link, sizeof link);
    static char paths[4][4096];
    int n = elf_debug_paths(lib->path, build_id, link, paths, 4);
    for (int i = 0; i < n; i++) {
        size_t dsize = 0;
        const uint8_t *debug = map_file(paths[i], &dsize);
        if (debug == NULL)
            continue;
        elf_symbols more;
        char err[256];
        int ok = elf_symbols_parse(debug, dsize, &more, err, sizeof err) == 0 && more.count > lib->symbols.count;
        munmap((void *)debug, dsize);
        if (ok) {
            elf_symbols_free(&lib->symbols);
            lib->symbols = more;
            return;
        }
        elf_symbols_free(&more);
    }
}

static native_lib *load_object(const loaded_object *o)
{
    native_lib *lib = calloc(1, sizeof *lib);
    char *path = strdup(o->vdso ? "linux-vdso.so.1" : o->path);
    if (lib == NULL || path == NULL) {
        free(lib);
        free(path);
        return NULL;
    }
    lib->path = path;
    const char *slash = strrchr(path, '/');
    lib->base = slash ? slash + 1 : path;
    lib->bias = o->bias;
    lib->text_lo = o->text_lo;
    lib->text_hi = o->text_hi;
    lib->kind = strcmp(lib->base, "libjvm.so") == 0 ? NATIVE_KIND_JVM : NATIVE_KIND_NATIVE;
    size_t size = 0;
    const uint8_t *bytes = o->vdso ? vdso_image(&size) : map_file(o->path, &size);
    if (bytes != NULL) {
        char err[256];
        /* A file that cannot be read as ELF still names its frames by
         * address and stops the walk there: no symbols, no rules. */
        if (elf_symbols_parse(bytes, size, &lib->symbols, err, sizeof err) != 0)
            elf_symbols_free(&lib->symbols);
        else if (!o->vdso && !elf_has_symtab(bytes, size))
            load_debug_symbols(lib, bytes, size);
        if (frame_table_build(bytes, size, &lib->frames, err, sizeof err) != 0)
            frame_table_free(&lib->frames);
        if (!o->vdso)
            munmap((void *)bytes, size);
    }
    return lib;
}

static int known(const loaded_object *o, int n)
{
    for (int i = 0; i < n; i++)
        if (libraries.libs[i]->bias == o->bias && libraries.libs[i]->text_lo == o->text_lo && !atomic_load(&libraries.libs[i]->gone))
            return 1;
    return 0;
}

/* Objects no longer listed are gone (dlclose): their addresses may serve
 * another object, which the handler must not read with these rules. */
static void mark_gone(const object_list *list, int n)
{
    for (int i = 0; i < n; i++) {
        int listed = 0;
        for (size_t k = 0; k < list->n && !listed; k++)
            listed = libraries.libs[i]->bias == list->items[k].bias && libraries.libs[i]->text_lo == list->items[k].text_lo;
        if (!listed)
            atomic_store(&libraries.libs[i]->gone, 1);
    }
}

int native_libs_refresh(void)
{
    object_list list = { 0 };
    pthread_mutex_lock(&libraries.lock);
    dl_iterate_phdr(collect_object, &list);
    int n = atomic_load(&libraries.count);
    if (list.adds != libraries.seen_adds || list.subs != libraries.seen_subs) {
        if (list.subs != libraries.seen_subs)
            mark_gone(&list, n);
        for (size_t i = 0; i < list.n && n < NATIVE_LIBS_MAX; i++) {
            if (known(&list.items[i], n))
                continue;
            native_lib *lib = load_object(&list.items[i]);
            if (lib == NULL)
                break;
            libraries.libs[n++] = lib;
            atomic_store_explicit(&libraries.count, n, memory_order_release);
        }
        libraries.seen_adds = list.adds;
        libraries.seen_subs = list.subs;
    }
    pthread_mutex_unlock(&libraries.lock);
    free(list.items);
    return n;
}

/* ------------------------------------------------------------ the kernel */

/* /proc/kallsyms' text symbols, sorted by address: read once, at the first
 * kernel frame to name (agent thread only). */
typedef struct kernel_symbol {
    uint64_t address;
    uint32_t name;                 /* offset in kernel.names */
} kernel_symbol;

static struct {
    int            loaded;
    kernel_symbol *symbols;
    size_t         count;
    char          *names;
    size_t         names_size;
} kernel;

static int compare_kernel_symbols(const void *a, const void *b)
{
    const kernel_symbol *x = a, *y = b;
    return (x->address > y->address) - (x->address < y->address);
}

static void load_kallsyms(void)
{
    kernel.loaded = 1;
    FILE *f = fopen("/proc/kallsyms", "re");
    if (f == NULL)
        return;
    size_t cap = 0, names_cap = 0;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long long address = 0;
        char type = 0, name[256];
        if (sscanf(line, "%llx %c %255s", &address, &type, name) != 3 || address == 0 ||
            (type != 't' && type != 'T'))
            continue;              /* data, or addresses hidden (kptr_restrict) */
        size_t len = strlen(name) + 1;
        if (kernel.count == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            kernel_symbol *more = realloc(kernel.symbols, ncap * sizeof *more);
            if (more == NULL)
                break;
            kernel.symbols = more;
            cap = ncap;
        }
        if (kernel.names_size + len > names_cap) {
            size_t ncap = names_cap ? names_cap * 2 : 1 << 20;
            char *more = realloc(kernel.names, ncap);
            if (more == NULL)
                break;
            kernel.names = more;
            names_cap = ncap;
        }
        memcpy(kernel.names + kernel.names_size, name, len);
        kernel.symbols[kernel.count++] = (kernel_symbol){ address, (uint32_t)kernel.names_size };
        kernel.names_size += len;
    }
    fclose(f);
    if (kernel.count)
        qsort(kernel.symbols, kernel.count, sizeof *kernel.symbols, compare_kernel_symbols);
}

static int symbolize_kernel(uintptr_t pc, const char **object, char *name, size_t size, uintptr_t *function)
{
    if (!kernel.loaded)
        load_kallsyms();
    *object = "kernel";
    size_t lo = 0, hi = kernel.count;
    while (lo < hi) {              /* the last symbol at or below pc */
        size_t mid = lo + (hi - lo) / 2;
        if (kernel.symbols[mid].address <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) {
        snprintf(name, size, "[kernel]");
        *function = 0;             /* all unnamed kernel code is one frame */
        return NATIVE_KIND_KERNEL;
    }
    snprintf(name, size, "%s", kernel.names + kernel.symbols[lo - 1].name);
    *function = (uintptr_t)kernel.symbols[lo - 1].address;
    return NATIVE_KIND_KERNEL;
}

/* ------------------------------------------------------------ naming */

int native_libs_symbolize(uintptr_t pc, const char **object, char *name, size_t size, uintptr_t *function)
{
    if ((pc >> 61) == 7)
        return symbolize_kernel(pc, object, name, size, function);
    const native_lib *lib = native_libs_find(pc);
    if (lib == NULL) {
        native_libs_refresh();     /* loaded since the last look? */
        lib = native_libs_find(pc);
    }
    if (lib == NULL)
        return 0;
    *object = lib->base;
    uint64_t offset = 0;
    const char *symbol = elf_symbols_lookup(&lib->symbols, (uint64_t)(pc - lib->bias), &offset);
    if (symbol == NULL) {
        snprintf(name, size, "[%s+0x%llx]", lib->base, (unsigned long long)(pc - lib->bias));
        *function = pc;
        return lib->kind;
    }
    /* .symtab's names of versioned symbols carry their version
     * ("pthread_mutex_lock@@GLIBC_2.2.5"): the function is the same. */
    char plain[1024];
    snprintf(plain, sizeof plain, "%s", symbol);
    char *version = strchr(plain, '@');
    if (version != NULL && version != plain)
        *version = '\0';
    demangle_symbol(plain, name, size);
    *function = pc - (uintptr_t)offset;
    return lib->kind;
}

void native_libs_stats(size_t *objects, size_t *symbols, size_t *rules, size_t *bytes)
{
    int n = atomic_load_explicit(&libraries.count, memory_order_acquire);
    *objects = (size_t)n;
    *symbols = *rules = *bytes = 0;
    for (int i = 0; i < n; i++) {
        *symbols += libraries.libs[i]->symbols.count;
        *rules += libraries.libs[i]->frames.count;
        *bytes += libraries.libs[i]->symbols.count * sizeof(elf_symbol) + libraries.libs[i]->symbols.names_size +
                  libraries.libs[i]->frames.count * sizeof(frame_rule);
    }
}
