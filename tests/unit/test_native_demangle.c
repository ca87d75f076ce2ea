/* Unit tests: the C++ demangler (src/native/demangle.c). Fixed cases, each
 * checked against c++filt (binutils 2.40) less the parameter list, return
 * type and qualifiers; the output buffer's contract; inputs that must give
 * up; and an oracle test: every C++ symbol of the machine's libstdc++
 * against c++filt itself. */
#include "unit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "native/demangle.h"

typedef struct {
    const char *mangled;
    const char *want;
    int demangled;      /* the return value: 0 when the name is copied */
} demangle_case;

static void check_cases(const demangle_case *cases, size_t count)
{
    char out[4096];
    for (size_t i = 0; i < count; i++) {
        int rc = demangle_symbol(cases[i].mangled, out, sizeof out);
        unit_check_str(__FILE__, __LINE__, cases[i].mangled, out, cases[i].want);
        if (rc != cases[i].demangled) {
            char msg[300];
            snprintf(msg, sizeof msg, "demangle_symbol(%.200s) returned %d", cases[i].mangled, rc);
            unit_fail(__FILE__, __LINE__, msg);
        }
    }
}

#define CHECK_CASES(cases) check_cases(cases, sizeof cases / sizeof cases[0])

TEST(native_demangle_names)
{
    static const demangle_case cases[] = {
        /* nested names, without parameters, return type or qualifiers */
        { "_ZN20G1ParScanThreadState20steal_and_trim_queueEP19GenericTaskQueueSetI17OverflowTaskQueueI11ScannerTaskL8MEMFLAGS5ELj131072EELS3_5EE",
          "G1ParScanThreadState::steal_and_trim_queue", 1 },
        { "_ZN10JavaThread3runEv", "JavaThread::run", 1 },
        { "_ZN20G1ParScanThreadState11do_oop_evacI9narrowOopEEvPT_",
          "G1ParScanThreadState::do_oop_evac<narrowOop>", 1 },
        { "_ZNK6Method9is_staticEv", "Method::is_static", 1 },
        { "_ZNVK1A1fEv", "A::f", 1 },
        { "_ZNO1A1fEv", "A::f", 1 },
        { "_ZNKR6icu_726number23NumberFormatterSettingsINS0_24LocalizedNumberFormatterEE12adoptPerUnitEPNS_11MeasureUnitE",
          "icu_72::number::NumberFormatterSettings<icu_72::number::LocalizedNumberFormatter>::adoptPerUnit", 1 },
        /* unscoped names, internal linkage (_ZL), anonymous namespaces, ABI tags */
        { "_Z3foov", "foo", 1 },
        { "_Z10os_abortedv", "os_aborted", 1 },
        { "_ZL10CICountOSR", "CICountOSR", 1 },
        { "_ZL13print_versionv", "print_version", 1 },
        { "_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo", 1 },
        { "_ZNKSt6locale4nameB5cxx11Ev", "std::locale::name[abi:cxx11]", 1 },
        /* std:: abbreviations (c++filt writes them out in full) */
        { "_ZNSt6vectorIiSaIiEE9push_backEOi",
          "std::vector<int, std::allocator<int> >::push_back", 1 },
        { "_ZNSsC1Ev",
          "std::basic_string<char, std::char_traits<char>, std::allocator<char> >::basic_string", 1 },
        { "_ZNSdD0Ev", "std::basic_iostream<char, std::char_traits<char> >::~basic_iostream", 1 },
        { "_ZNSo5flushEv", "std::basic_ostream<char, std::char_traits<char> >::flush", 1 },
        { "_ZNSi4readEPcl", "std::basic_istream<char, std::char_traits<char> >::read", 1 },
        { "_ZNSbIwSt11char_traitsIwESaIwEE4swapERS2_",
          "std::basic_string<wchar_t, std::char_traits<wchar_t>, std::allocator<wchar_t> >::swap", 1 },
        /* substitutions: S_, S1_, and base 36 (SA_ is the 12th) in the
         * parameters, which must parse even though they do not print */
        { "_ZSt4endlIcSt11char_traitsIcEERSt13basic_ostreamIT_T0_ES6_",
          "std::endl<char, std::char_traits<char> >", 1 },
        { "_ZN11klassVtable12get_mirandasEP13GrowableArrayIP6MethodES4_PK5KlassP5ArrayIS2_ESA_PS8_IP13InstanceKlassEb",
          "klassVtable::get_mirandas", 1 },
        { "_ZN14AccessInternal19PostRuntimeDispatchIN11ZBarrierSet13AccessBarrierILm1335366ES1_EELNS_11BarrierTypeE8ELm1335366EE18oop_access_barrierIP12HeapWordImplEEbP12arrayOopDescmPT_SA_mSC_m",
          "AccessInternal::PostRuntimeDispatch<ZBarrierSet::AccessBarrier<1335366ul, ZBarrierSet>, (AccessInternal::BarrierType)8, 1335366ul>::oop_access_barrier<HeapWordImpl*>", 1 },
        { "_ZSt4swapIiEvRT_S1_", "std::swap<int>", 1 },
        /* constructors and destructors */
        { "_ZN6ThreadC1Ev", "Thread::Thread", 1 },
        { "_ZN6ThreadC2Ev", "Thread::Thread", 1 },
        { "_ZN6ThreadD0Ev", "Thread::~Thread", 1 },
        { "_ZN6ThreadD1Ev", "Thread::~Thread", 1 },
        { "_ZN6ThreadD2Ev", "Thread::~Thread", 1 },
        { "_ZN1BCI11AEi", "B::A", 1 },        /* inheriting constructor */
        { "_ZN12_GLOBAL__N_11AC2Ev", "(anonymous namespace)::A::A", 1 },
        /* operators */
        { "_ZN1AnwEm", "A::operator new", 1 },
        { "_ZN1AdaEPv", "A::operator delete[]", 1 },
        { "_ZN1AclEv", "A::operator()", 1 },
        { "_ZN1AixEm", "A::operator[]", 1 },
        { "_ZN1AeqERKS_", "A::operator==", 1 },
        { "_ZN1AlsEi", "A::operator<<", 1 },
        { "_ZN1AptEv", "A::operator->", 1 },
        { "_ZN1AaSERKS_", "A::operator=", 1 },
        { "_ZN1AcviEv", "A::operator int", 1 },
        { "_ZNK1AcvPKcEv", "A::operator char const*", 1 },
        { "_ZN1AltIiEEbT_", "A::operator< <int>", 1 },
        { "_ZN1AlsIiEERS_T_", "A::operator<< <int>", 1 },
        { "_ZN1AcvT_IiEEv", "A::operator int<int>", 1 },  /* T_ of the operator's template */
    };
    CHECK_CASES(cases);
}

TEST(native_demangle_template_arguments)
{
    static const demangle_case cases[] = {
        /* types */
        { "_Z1fIPFviEEvv", "f<void (*)(int)>", 1 },
        { "_Z1fIFPFivEvEEvv", "f<int (*())()>", 1 },
        { "_Z1fIA10_iEvv", "f<int [10]>", 1 },
        { "_Z1fIPA10_iEvv", "f<int (*) [10]>", 1 },
        { "_Z1fIM1AFivEEvv", "f<int (A::*)()>", 1 },
        { "_Z1fIM1AKFivEEvv", "f<int (A::*)() const>", 1 },
        { "_Z1fIM1AiEvv", "f<int A::*>", 1 },
        { "_Z1fIRKiEvv", "f<int const&>", 1 },
        { "_Z1fIOiEvv", "f<int&&>", 1 },
        { "_Z1fIPVKcEvv", "f<char const volatile*>", 1 },
        { "_Z1fIN1A1BEEvv", "f<A::B>", 1 },
        { "_Z1fIN1AIiE1BEEvv", "f<A<int>::B>", 1 },
        { "_Z1fISt4pairIiS0_IicEEEvv", "f<std::pair<int, std::pair<int, char> > >", 1 },
        { "_Z1fIiEvT_", "f<int>", 1 },
        { "_Z1fPFvvE", "f", 1 },
        /* argument packs */
        { "_Z1fIJicdEEvv", "f<int, char, double>", 1 },
        { "_Z1fIJEEvv", "f<>", 1 },
        /* literals */
        { "_Z1fILb1EEvv", "f<true>", 1 },
        { "_Z1fILb0EEvv", "f<false>", 1 },
        { "_Z1fILj131072EEvv", "f<131072u>", 1 },
        { "_Z1fIL8MEMFLAGS5EEvv", "f<(MEMFLAGS)5>", 1 },
        { "_Z1fILin5EEvv", "f<-5>", 1 },
        { "_Z1fILm5EEvv", "f<5ul>", 1 },
        { "_Z1fILl5EEvv", "f<5l>", 1 },
        { "_Z1fILx5EEvv", "f<5ll>", 1 },
        { "_Z1fILy5EEvv", "f<5ull>", 1 },
        { "_Z1fILs5EEvv", "f<(short)5>", 1 },
        { "_Z1fILc65EEvv", "f<(char)65>", 1 },
        { "_Z1fILDnEEvv", "f<decltype(nullptr)>", 1 },
        { "_Z1fILDn0EEvv", "f<(decltype(nullptr))0>", 1 },
        /* external names, and the few expressions libjvm uses */
        { "_Z1fIL_Z3foovEEvv", "f<foo()>", 1 },
        { "_Z1fIXadL_Z3foovEEEvv", "f<&(foo())>", 1 },
        { "_ZN14JfrVMOperationI18JfrRecorderServiceXadL_ZNS0_15safepoint_clearEvEEE4doitEv",
          "JfrVMOperation<JfrRecorderService, &JfrRecorderService::safepoint_clear>::doit", 1 },
        { "_Z18get_header_versionILi256EEvRAT__c", "get_header_version<256>", 1 },
    };
    CHECK_CASES(cases);
}

TEST(native_demangle_local_names)
{
    static const demangle_case cases[] = {
        /* the enclosing function keeps its parameters (as in c++filt) */
        { "_ZZN3Foo3barEvE1x", "Foo::bar()::x", 1 },
        { "_ZZN3Foo3barEvE1x_0", "Foo::bar()::x", 1 },      /* discriminators */
        { "_ZZN3Foo3barEvE1x__12_", "Foo::bar()::x", 1 },
        { "_ZZ3fooIiEvvE1x", "foo<int>()::x", 1 },          /* ... not its return type */
        { "_ZZ3foovENK1A3barEv", "foo()::A::bar", 1 },
        { "_ZZN1A1fEvEN1B1gEv", "A::f()::B::g", 1 },
        { "_ZZZ1fvEN1A1gEvE1x", "f()::A::g()::x", 1 },
        { "_ZZ3foovEs", "foo()::string literal", 1 },
        { "_ZZ3foovEs_0", "foo()::string literal", 1 },
        /* lambdas and unnamed types */
        { "_ZZ3foovENKUliE_clEi", "foo()::{lambda(int)#1}::operator()", 1 },
        { "_ZZ3foovENKUlvE0_clEv", "foo()::{lambda()#2}::operator()", 1 },
        { "_ZZ3fooIiEvvENKUlvE_clEv", "foo<int>()::{lambda()#1}::operator()", 1 },
        { "_ZZ1fvENKUlT_E_clIiEEDaS_", "f()::{lambda(auto:1)#1}::operator()<int>", 1 },
        { "_ZN18grpc_ev_poll_posixMUlvE0_4_FUNEv", "grpc_ev_poll_posix::{lambda()#2}::_FUN", 1 },
        { "_ZN1AUt_3fooEv", "A::{unnamed type#1}::foo", 1 },
        { "_ZNSt17_Function_handlerIFvN2v88internal10HeapObjectENS1_14FullObjectSlotES2_EZNS1_18SharedFunctionInfo23DiscardCompiledMetadataEPNS1_7IsolateESt8functionIS4_EEd_UlS2_S3_S2_E_E10_M_managerERSt9_Any_dataRKSC_St18_Manager_operation",
          "std::_Function_handler<void (v8::internal::HeapObject, v8::internal::FullObjectSlot, v8::internal::HeapObject), v8::internal::SharedFunctionInfo::DiscardCompiledMetadata(v8::internal::Isolate*, std::function<void (v8::internal::HeapObject, v8::internal::FullObjectSlot, v8::internal::HeapObject)>)::{default arg#1}::{lambda(v8::internal::HeapObject, v8::internal::FullObjectSlot, v8::internal::HeapObject)#1}>::_M_manager", 1 },
    };
    CHECK_CASES(cases);
}

TEST(native_demangle_special_names_and_clones)
{
    static const demangle_case cases[] = {
        { "_ZTV6Thread", "vtable for Thread", 1 },
        { "_ZTI6Thread", "typeinfo for Thread", 1 },
        { "_ZTS6Thread", "typeinfo name for Thread", 1 },
        { "_ZTT6Thread", "VTT for Thread", 1 },
        { "_ZTCSd0_Si",
          "construction vtable for std::basic_istream<char, std::char_traits<char> >-in-std::basic_iostream<char, std::char_traits<char> >", 1 },
        { "_ZGVZN3Foo3barEvE1x", "guard variable for Foo::bar()::x", 1 },
        { "_ZTH13threadContext", "TLS init function for threadContext", 1 },
        { "_ZTW13threadContext", "TLS wrapper function for threadContext", 1 },
        /* these wrap a function: its parameters go too */
        { "_ZThn8_N6Thread3runEv", "non-virtual thunk to Thread::run", 1 },
        { "_ZTv0_n24_N6Thread3runEv", "virtual thunk to Thread::run", 1 },
        { "_ZTch0_h16_N1A1fEv", "covariant return thunk to A::f", 1 },
        { "_ZGTtNSt11logic_errorC1EPKc", "transaction clone for std::logic_error::logic_error", 1 },
        { "_ZGTnNSt11logic_errorC1EPKc", "non-transaction clone for std::logic_error::logic_error", 1 },
        /* gcc's clones */
        { "_ZN1A1fEv.cold", "A::f [clone .cold]", 1 },
        { "_ZN1A1fEv.part.0", "A::f [clone .part.0]", 1 },
        { "_ZN1A1fEv.isra.0", "A::f [clone .isra.0]", 1 },
        { "_ZN1A1fEv.constprop.0", "A::f [clone .constprop.0]", 1 },
        { "_ZN1A1fEv.lto_priv.0", "A::f [clone .lto_priv.0]", 1 },
        { "_ZN1A1fEv.constprop.0.isra.0", "A::f [clone .constprop.0] [clone .isra.0]", 1 },
        { "_ZN1A1fEv.part.0.cold", "A::f [clone .part.0] [clone .cold]", 1 },
        { "_ZL3foov.part.0", "foo [clone .part.0]", 1 },
        { "_ZThn8_N6Thread3runEv.cold", "non-virtual thunk to Thread::run [clone .cold]", 1 },
    };
    CHECK_CASES(cases);
}

/* pre, then middle n times, then post, malloc'd: deep and long names. */
static char *repeat(const char *pre, const char *middle, int n, const char *post)
{
    size_t len = strlen(pre) + strlen(middle) * (size_t)n + strlen(post) + 1;
    char *s = malloc(len);
    strcpy(s, pre);
    for (int i = 0; i < n; i++)
        strcat(s, middle);
    strcat(s, post);
    return s;
}

/* How a mangled name refers to substitution number `sub`: S_, S0_, ... SA_, ... S10_ */
static void seq_ref(char *buf, size_t size, int sub)
{
    static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    int id = sub - 1;
    if (sub == 0)
        snprintf(buf, size, "S_");
    else if (id < 36)
        snprintf(buf, size, "S%c_", digits[id]);
    else
        snprintf(buf, size, "S%c%c_", digits[id / 36], digits[id % 36]);
}

TEST(native_demangle_gives_up)
{
    static const demangle_case cases[] = {
        { "memcpy", "memcpy", 0 },
        { "", "", 0 },
        { "_Z", "_Z", 0 },
        { "_ZERO", "_ZERO", 0 },
        { "_ZN1A1fEvJUNK", "_ZN1A1fEvJUNK", 0 },            /* trailing garbage */
        { "_ZN1A1fEv.", "_ZN1A1fEv.", 0 },
        { "_ZN1A1xE.lto_priv.0", "_ZN1A1xE.lto_priv.0", 0 }, /* c++filt refuses a data clone */
        { "_ZGR1x_", "_ZGR1x_", 0 },
        { "_Z1fILiEEvv", "_Z1fILiEEvv", 0 },                /* a literal without value */
        /* not known here: decltype, expressions, vectors, _FloatN, modules */
        { "_Z1fIiEDTcl1gfp_EET_", "_Z1fIiEDTcl1gfp_EET_", 0 },
        { "_Z1fILi1EEvPAplT_Li1E_i", "_Z1fILi1EEvPAplT_Li1E_i", 0 },
        { "_Z1fIDv4_fEvv", "_Z1fIDv4_fEvv", 0 },
        { "_Z1fIDF16_Evv", "_Z1fIDF16_Evv", 0 },
        { "_ZN1AW1B1fEv", "_ZN1AW1B1fEv", 0 },
        /* template parameters that do not resolve (c++filt fails too) */
        { "_Z1fIT_Evv", "_Z1fIT_Evv", 0 },
        { "_ZNK1AcvN1BIT_EEIiEEv", "_ZNK1AcvN1BIT_EEIiEEv", 0 },
    };
    CHECK_CASES(cases);
    CHECK(demangle_symbol(NULL, NULL, 0) == 0);

    /* bounded: too deep, too long, too much expansion through substitutions */
    char out[256];
    char *deep = repeat("_Z1f", "P", 500, "i");
    CHECK(demangle_symbol(deep, out, sizeof out) == 0);
    CHECK(strncmp(out, deep, sizeof out - 1) == 0 && strlen(out) == sizeof out - 1);
    free(deep);
    char *nested = repeat("_Z1fI", "1AI", 300, "i");
    CHECK(demangle_symbol(nested, out, sizeof out) == 0);
    free(nested);
    char *fine = repeat("_Z1f", "P", 40, "i");
    CHECK(demangle_symbol(fine, out, sizeof out) == 1);
    CHECK_STR(out, "f");
    free(fine);
    char *long_name = repeat("_ZN", "1A", 600, "Ev");    /* 1205 chars: c++filt refuses it too */
    CHECK(demangle_symbol(long_name, out, sizeof out) == 0);
    free(long_name);
    /* A<int>, A<A<int>, A<int> >, ... 40 times: 2^40 characters. The
     * substitutions are A (#0), A<int> (#1), A (#2), A<#1, #1> (#3) ... */
    char exponential[2048] = "_Z1f1AIiE";
    for (int sub = 1; sub < 80; sub += 2) {
        char ref[8];
        seq_ref(ref, sizeof ref, sub);
        size_t len = strlen(exponential);
        snprintf(exponential + len, sizeof exponential - len, "1AI%s%sE", ref, ref);
    }
    CHECK(demangle_symbol(exponential, out, sizeof out) == 0);
}

TEST(native_demangle_output_buffer)
{
    const char *mangled = "_ZN20G1ParScanThreadState11do_oop_evacI9narrowOopEEvPT_";
    const char *full = "G1ParScanThreadState::do_oop_evac<narrowOop>";
    char out[64];

    /* cut to fit, a prefix of the whole, still NUL-terminated */
    memset(out, 'x', sizeof out);
    CHECK(demangle_symbol(mangled, out, 11) == 1);
    CHECK_STR(out, "G1ParScanT");
    CHECK(out[11] == 'x');
    CHECK(demangle_symbol(mangled, out, 1) == 1);
    CHECK_STR(out, "");
    memset(out, 'x', sizeof out);
    CHECK(demangle_symbol(mangled, out, 0) == 1);       /* writes nothing */
    CHECK(out[0] == 'x');
    CHECK(demangle_symbol(mangled, out, strlen(full) + 1) == 1);
    CHECK_STR(out, full);
    CHECK(demangle_symbol(mangled, out, strlen(full)) == 1);
    CHECK(strlen(out) == strlen(full) - 1);

    /* a name it does not take is copied, cut the same way */
    CHECK(demangle_symbol("memcpy", out, 4) == 0);
    CHECK_STR(out, "mem");
    memset(out, 'x', sizeof out);
    CHECK(demangle_symbol("_ZERO", out, 0) == 0);
    CHECK(out[0] == 'x');
}

/* Every prefix of real names, each in a buffer of exactly its size: any
 * read past the NUL is an overflow under ASan. Plus random bytes. */
TEST(native_demangle_reads_only_to_nul)
{
    static const char *const names[] = {
        "_ZN14AccessInternal19PostRuntimeDispatchIN11ZBarrierSet13AccessBarrierILm1335366ES1_EELNS_11BarrierTypeE8ELm1335366EE18oop_access_barrierIP12HeapWordImplEEbP12arrayOopDescmPT_SA_mSC_m",
        "_ZNSt17_Function_handlerIFvN2v88internal10HeapObjectENS1_14FullObjectSlotES2_EZNS1_18SharedFunctionInfo23DiscardCompiledMetadataEPNS1_7IsolateESt8functionIS4_EEd_UlS2_S3_S2_E_E10_M_managerERSt9_Any_dataRKSC_St18_Manager_operation",
        "_ZN14JfrVMOperationI18JfrRecorderServiceXadL_ZNS0_15safepoint_clearEvEEE4doitEv",
        "_ZZN3Foo3barEvE1x__12_",
        "_ZThn8_N6Thread3runEv.constprop.0.isra.0",
        "_ZTCSd0_Si",
        "_ZN1AcvT_IiEEv",
        "_Z1fIM1AKFivEEvv",
        "_ZZ1fvENKUlT_E_clIiEEDaS_",
        "_ZGVZN3Foo3barEvE1x",
    };
    char out[512];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t len = strlen(names[i]);
        for (size_t cut = 0; cut <= len; cut++) {
            char *prefix = malloc(cut + 1);
            memcpy(prefix, names[i], cut);
            prefix[cut] = '\0';
            int rc = demangle_symbol(prefix, out, sizeof out);
            CHECK(memchr(out, '\0', sizeof out) != NULL);
            if (rc == 0)
                CHECK_STR(out, prefix);
            free(prefix);
        }
    }
    static const char alphabet[] = "NEISTZLKRPOF0123456789_ivcjlmbdSsXJ";
    uint32_t seed = 12345;
    for (int i = 0; i < 20000; i++) {
        char junk[48];
        size_t len = 2 + (size_t)(i % 40);
        junk[0] = '_';
        junk[1] = 'Z';
        for (size_t k = 2; k < len; k++) {
            seed = seed * 1103515245u + 12345u;
            /* mostly mangling characters, sometimes any byte */
            junk[k] = (seed >> 24) % 8 == 0 ? (char)(1 + (seed >> 16) % 255)
                                            : alphabet[(seed >> 16) % (sizeof alphabet - 1)];
        }
        junk[len] = '\0';
        char *exact = malloc(len + 1);
        memcpy(exact, junk, len + 1);
        int rc = demangle_symbol(exact, out, sizeof out);
        CHECK(rc == 0 || rc == 1);
        if (rc == 0)
            CHECK(strcmp(out, exact) == 0);
        free(exact);
    }
}

/* ------------------------------------------------------------------ */
/* The oracle: c++filt on libstdc++'s symbols                          */

/* The prefixes of c++filt's special names. Those of data are kept whole;
 * those of functions lose the function's parameters like a plain one. */
static const char *const data_prefixes[] = {
    "vtable for ", "VTT for ", "construction vtable for ", "typeinfo for ",
    "typeinfo name for ", "typeinfo fn for ", "guard variable for ",
    "TLS init function for ", "TLS wrapper function for ", "reference temporary #",
    "java Class for ", "template parameter object for ",
};
static const char *const function_prefixes[] = {
    "non-virtual thunk to ", "virtual thunk to ", "covariant return thunk to ",
    "transaction clone for ", "non-transaction clone for ", "hidden alias for ",
};

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int closes(char c) { return c == ')' || c == '>' || c == ']' || c == '}'; }
static int opens(char c) { return c == '(' || c == '<' || c == '[' || c == '{'; }

/* A copy of s where the characters of operator names (operator<<,
 * operator(), operator->) are 'x', so that they do not count as brackets. */
static char *mask_operators(const char *s)
{
    static const char *const ops[] = {
        "->*", "<<=", ">>=", "<=>", "()", "[]", "->", "<<", ">>", "<=", ">=", "==", "!=",
        "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
        "<", ">", "+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "=", ",",
    };
    char *mask = strdup(s);
    for (const char *p = strstr(s, "operator"); p != NULL; p = strstr(p + 8, "operator")) {
        if (p > s && is_ident(p[-1]))
            continue;
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
            if (starts_with(p + 8, ops[i])) {
                memset(mask + (p + 8 - s), 'x', strlen(ops[i]));
                break;
            }
    }
    return mask;
}

/* Whether the space at `at` (depth 0) is inside an operator's name:
 * "operator new", "operator<< <int>", "operator unsigned long". */
static int in_operator_name(const char *name, const char *mask, size_t at)
{
    size_t start = 0;
    int depth = 0;
    for (size_t k = at; k-- > 0;) {
        if (closes(mask[k]))
            depth++;
        else if (opens(mask[k]))
            depth--;
        else if (depth == 0 && mask[k] == ':' && k > 0 && mask[k - 1] == ':') {
            start = k + 1;
            break;
        }
    }
    return starts_with(name + start, "operator") && !is_ident(name[start + 8]);
}

/* Where the name starts after a template function's return type (0 if it
 * has none): after the last space outside brackets and operator names. */
static size_t after_return_type(const char *name, const char *mask, size_t end)
{
    int depth = 0;
    for (size_t k = end; k-- > 0;) {
        if (closes(mask[k]))
            depth++;
        else if (opens(mask[k]))
            depth--;
        else if (mask[k] == ' ' && depth == 0 && !in_operator_name(name, mask, k))
            return k + 1;
    }
    return 0;
}

/* What demangle_symbol should give for c++filt's output `full`: that less
 * the outermost function's parameter list, its qualifiers and (templates
 * only) its return type. Returns a malloc'd string. */
static char *expected_name(const char *full)
{
    size_t size = strlen(full) + 1;
    char *body = strdup(full), *clones = calloc(1, size), *want = malloc(size);
    /* " [clone .cold]" suffixes stay, after the name */
    for (;;) {
        size_t len = strlen(body);
        char *clone = NULL;
        for (char *p = strstr(body, " [clone "); p != NULL; p = strstr(p + 1, " [clone "))
            clone = p;
        if (clone == NULL || body[len - 1] != ']' || strchr(clone, ']') != body + len - 1)
            break;
        memmove(clones + strlen(clone), clones, strlen(clones) + 1);
        memcpy(clones, clone, strlen(clone));
        *clone = '\0';
    }
    for (size_t i = 0; i < sizeof data_prefixes / sizeof data_prefixes[0]; i++)
        if (starts_with(body, data_prefixes[i])) {
            snprintf(want, size, "%s%s", body, clones);
            free(body);
            free(clones);
            return want;
        }
    const char *prefix = "";
    for (size_t i = 0; i < sizeof function_prefixes / sizeof function_prefixes[0]; i++)
        if (starts_with(body, function_prefixes[i]))
            prefix = function_prefixes[i];
    char *name = body + strlen(prefix);
    static const char *const qualifiers[] = { " const", " volatile", " restrict", " &&", " &" };
    for (int stripped = 1; stripped;) {
        stripped = 0;
        for (size_t i = 0; i < sizeof qualifiers / sizeof qualifiers[0]; i++) {
            size_t len = strlen(name), qlen = strlen(qualifiers[i]);
            if (len > qlen && strcmp(name + len - qlen, qualifiers[i]) == 0) {
                name[len - qlen] = '\0';
                stripped = 1;
            }
        }
    }
    char *mask = mask_operators(name);
    size_t len = strlen(name), start = 0;
    if (len > 0 && mask[len - 1] == ')') {
        /* the parameter list: back to its '(' (parentheses only: <> in the
         * parameters are balanced, operator names are masked) */
        int depth = 0;
        size_t open = len;
        while (open-- > 0) {
            if (mask[open] == ')')
                depth++;
            else if (mask[open] == '(' && --depth == 0)
                break;
        }
        name[open] = mask[open] = '\0';
        if (open > 0 && mask[open - 1] == '>')
            start = after_return_type(name, mask, open);
    }
    snprintf(want, size, "%s%s%s", prefix, name + start, clones);
    free(mask);
    free(body);
    free(clones);
    return want;
}

/* Our own check of the stripping, on what c++filt prints. */
TEST(native_demangle_oracle_strips_like_cxxfilt)
{
    static const char *const cases[][2] = {
        { "void G1ParScanThreadState::do_oop_evac<narrowOop>(narrowOop*)",
          "G1ParScanThreadState::do_oop_evac<narrowOop>" },
        { "Foo::bar() const", "Foo::bar" },
        { "A::f() const &&", "A::f" },
        { "foo()::{lambda(int)#1}::operator()(int) const", "foo()::{lambda(int)#1}::operator()" },
        { "std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> >(std::basic_ostream<char, std::char_traits<char> >&, char const*)",
          "std::operator<< <std::char_traits<char> >" },
        { "std::basic_istream<char, std::char_traits<char> >& std::operator>><char, std::char_traits<char> >(std::basic_istream<char, std::char_traits<char> >&, char&)",
          "std::operator>><char, std::char_traits<char> >" },
        { "bool A::operator< <int>(int)", "A::operator< <int>" },
        { "A::operator->()", "A::operator->" },
        { "A::operator unsigned long<int>()", "A::operator unsigned long<int>" },
        { "(anonymous namespace)::foo(int)", "(anonymous namespace)::foo" },
        { "std::vector<int, std::allocator<int> > const& f<int>(int)", "f<int>" },
        { "A::f() [clone .part.0] [clone .cold]", "A::f [clone .part.0] [clone .cold]" },
        { "non-virtual thunk to Thread::run()", "non-virtual thunk to Thread::run" },
        { "typeinfo for void (*)()", "typeinfo for void (*)()" },
        { "guard variable for Foo::bar()::x", "guard variable for Foo::bar()::x" },
        { "foo<int>()::x", "foo<int>()::x" },
        { "JavaThread::thread_main_inner", "JavaThread::thread_main_inner" },
        { "std::__exception_ptr::exception_ptr::operator void (std::__exception_ptr::exception_ptr::*)()() const",
          "std::__exception_ptr::exception_ptr::operator void (std::__exception_ptr::exception_ptr::*)()" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *want = expected_name(cases[i][0]);
        CHECK_STR(want, cases[i][1]);
        free(want);
    }
}

static int has_tool(const char *tool)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    return system(cmd) == 0;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The distinct _Z names libstdc++ defines (nm's "name@@VERSION" cut at @). */
static char **libstdcxx_names(const char *lib, size_t *count)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s' 2>/dev/null", lib);
    FILE *nm = popen(cmd, "r");
    char **names = NULL;
    size_t n = 0, cap = 0;
    char *line = NULL;
    size_t line_cap = 0;
    while (nm != NULL && getline(&line, &line_cap, nm) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *name = strrchr(line, ' ');
        name = name != NULL ? name + 1 : line;
        name[strcspn(name, "@")] = '\0';
        if (!starts_with(name, "_Z"))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            names = realloc(names, cap * sizeof *names);
        }
        names[n++] = strdup(name);
    }
    free(line);
    if (nm != NULL)
        pclose(nm);
    if (n > 1)
        qsort(names, n, sizeof *names, compare_strings);
    size_t unique = 0;
    for (size_t i = 0; i < n; i++) {
        if (unique > 0 && strcmp(names[unique - 1], names[i]) == 0)
            free(names[i]);
        else
            names[unique++] = names[i];
    }
    *count = unique;
    return names;
}

/* c++filt's output for each name, in one run. */
static char **cxxfilt(char **names, size_t count)
{
    char path[] = "/tmp/hprof_demangle_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    FILE *in = fdopen(fd, "w");
    for (size_t i = 0; i < count; i++)
        fprintf(in, "%s\n", names[i]);
    fclose(in);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "c++filt < %s", path);
    FILE *out = popen(cmd, "r");
    char **demangled = calloc(count, sizeof *demangled);
    char *line = NULL;
    size_t line_cap = 0, n = 0;
    while (out != NULL && n < count && getline(&line, &line_cap, out) > 0) {
        line[strcspn(line, "\n")] = '\0';
        demangled[n++] = strdup(line);
    }
    free(line);
    if (out != NULL)
        pclose(out);
    unlink(path);
    if (n == count)
        return demangled;
    for (size_t i = 0; i < n; i++)
        free(demangled[i]);
    free(demangled);
    return NULL;
}

TEST(native_demangle_matches_cxxfilt)
{
    const char *lib = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
    if (!has_tool("nm") || !has_tool("c++filt")) {
        unit_fail(__FILE__, __LINE__, "nm and c++filt are needed: install binutils");
        return;
    }
    if (access(lib, R_OK) != 0) {
        unit_fail(__FILE__, __LINE__, "no /usr/lib/x86_64-linux-gnu/libstdc++.so.6 to compare on");
        return;
    }
    size_t count = 0;
    char **names = libstdcxx_names(lib, &count);
    char **filtered = count > 1000 ? cxxfilt(names, count) : NULL;
    CHECK(count > 1000);
    CHECK(filtered != NULL);
    size_t exact = 0, gave_up = 0, wrong = 0;
    char out[4096];
    for (size_t i = 0; filtered != NULL && i < count; i++) {
        int rc = demangle_symbol(names[i], out, sizeof out);
        if (rc == 0) {
            gave_up++;
            CHECK_STR(out, names[i]);
            continue;
        }
        /* c++filt prints what it cannot demangle unchanged */
        char *want = strcmp(filtered[i], names[i]) == 0 ? NULL : expected_name(filtered[i]);
        if (want != NULL && strcmp(out, want) == 0) {
            exact++;
        } else {
            if (wrong++ < 5)
                fprintf(stderr, "    wrong: %s\n      c++filt: %s\n      want: %s\n      got:  %s\n",
                        names[i], filtered[i], want ? want : "(not demangled)", out);
        }
        free(want);
    }
    printf("    libstdc++: %zu names, %zu as c++filt, %zu given up, %zu wrong\n",
           count, exact, gave_up, wrong);
    CHECK(wrong == 0);
    CHECK(exact * 100 >= count * 99);
    for (size_t i = 0; i < count; i++) {
        free(names[i]);
        if (filtered != NULL)
            free(filtered[i]);
    }
    free(names);
    free(filtered);
}
