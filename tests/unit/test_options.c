/* Unit tests: option parsing, HPROF's names, defaults and errors. */
#include "unit.h"

#include "options/options.h"

static hprof_options o;
static char err[1024];

TEST(options_defaults_match_hprof)
{
    CHECK(options_parse("cpu=samples", &o, err, sizeof err) == 0);
    CHECK(o.cpu == CPU_SAMPLES && o.heap == HEAP_OFF && !o.monitor);
    CHECK(o.depth == 4 && o.interval_ms == 10 && o.lineno && !o.thread && o.doe && o.force);
    CHECK(o.format == 'a' && o.cutoff > 0.00009 && o.cutoff < 0.00011);
    CHECK_STR(o.file, "java.hprof.txt");
    CHECK(options_output(&o, "collapsed")[0] == '\0');
    /* HPROF: no cpu/heap/monitor option means heap=all. */
    CHECK(options_parse("", &o, err, sizeof err) == 0 && o.heap == HEAP_ALL);
    CHECK(options_parse(NULL, &o, err, sizeof err) == 0 && o.heap == HEAP_ALL);
    CHECK(options_parse("format=b,heap=dump", &o, err, sizeof err) == 0);
    CHECK_STR(o.file, "java.hprof");
}

TEST(options_all_values)
{
    CHECK(options_parse("cpu=samples,interval=1,depth=12,thread=y,lineno=n,cutoff=0.05,"
                        "file=/tmp/x.txt,force=n,doe=n,verbose=n,collapsed=/tmp/c.txt,msa=n",
                        &o, err, sizeof err) == 0);
    CHECK(o.interval_ms == 1 && o.depth == 12 && o.thread && !o.lineno && !o.force && !o.doe);
    CHECK(!o.verbose && o.cutoff == 0.05);
    CHECK_STR(o.file, "/tmp/x.txt");
    CHECK_STR(options_output(&o, "collapsed"), "/tmp/c.txt");
    CHECK(options_parse("help", &o, err, sizeof err) == 0 && o.help);
    CHECK(options_parse("net=localhost:9999,cpu=samples", &o, err, sizeof err) == 0);
    CHECK_STR(o.net, "localhost:9999");
    CHECK(options_parse("depth=0,cpu=samples", &o, err, sizeof err) == 0 && o.depth == 0);
    CHECK(o.sampler == 'a');
    CHECK(options_parse("cpu=samples,sampler=timer", &o, err, sizeof err) == 0 && o.sampler == 't');
    CHECK(options_parse("cpu=samples,sampler=perf", &o, err, sizeof err) == 0 && o.sampler == 'p');
    CHECK(options_parse("cpu=samples", &o, err, sizeof err) == 0 && o.verbose == 1);
    CHECK(options_parse("cpu=samples,verbose=all", &o, err, sizeof err) == 0 && o.verbose == 2);
    CHECK(options_parse("cpu=samples,verbose=some", &o, err, sizeof err) != 0);
}

/* Each bad input must fail with a message naming the option. */
static void expect_error(const char *text, const char *must_contain)
{
    err[0] = '\0';
    int rc = options_parse(text, &o, err, sizeof err);
    CHECK(rc == -1);
    if (strstr(err, must_contain) == NULL) {
        char m[1200];
        snprintf(m, sizeof m, "error for '%s' should contain '%s': %s", text, must_contain, err);
        unit_fail(__FILE__, __LINE__, m);
    }
}

TEST(options_errors_name_the_option)
{
    expect_error("foo=bar", "unknown option 'foo'");
    expect_error("foo=bar", "Options are: help, heap, cpu");      /* nothing near: the list */
    expect_error("intervl=5", "did you mean 'interval'?");
    expect_error("flamegrpah=f.html", "did you mean 'flamegraph'?");   /* swapped letters */
    expect_error("dept=4", "did you mean 'depth'?");
    expect_error("cpo=samples", "did you mean 'cpu'?");
    expect_error("zz=1", "Options are:");                          /* 2 edits from several: no guess */
    expect_error("cpu=bogus", "'cpu': accepted values are samples, times or old");
    expect_error("heap=most", "'heap'");
    expect_error("interval=abc", "'interval'");
    expect_error("interval=0", "'interval'");
    expect_error("interval=10ms", "'interval'");
    expect_error("depth=-1", "'depth'");
    expect_error("depth=257", "'depth'");
    expect_error("cutoff=2", "'cutoff'");
    expect_error("cutoff=x", "'cutoff'");
    expect_error("thread=maybe", "'thread': accepted values are y or n");
    expect_error("lineno=yes", "'lineno'");
    expect_error("format=c", "'format'");
    expect_error("file=", "'file'");
    expect_error("net=nohost", "'net'");
    expect_error("net=host:99999", "'net'");
    expect_error("cpu", "'cpu' needs a value");
    expect_error("cpu=samples,,depth=3", "empty option");
    expect_error("cpu=samples,", "empty option");
    expect_error("msa=y", "'msa=y'");
    expect_error("help=y", "'help' takes no value");
    expect_error("format=b,monitor=y", "format=b");
    expect_error("cpu=old,format=b", "'format=b' cannot be used with 'cpu=old'");
    expect_error("format=b,cpu=times", "'format=b' cannot be used with 'cpu=times'");
    expect_error("deadlock=100", "needs monitor=y");
    expect_error("monitor=y,deadlock=-5", "'deadlock'");
    expect_error("sampler=fast", "'sampler': accepted values are auto, perf or timer");
}

TEST(options_every_feature_is_implemented)
{
    CHECK(options_parse("cpu=samples,collapsed=x", &o, err, sizeof err) == 0);
    CHECK(options_check_implemented(&o, err, sizeof err) == 0);
    CHECK(options_parse("cpu=samples,net=localhost:1", &o, err, sizeof err) == 0);
    CHECK(options_check_implemented(&o, err, sizeof err) == 0);
    const char *heap[] = { "heap=sites", "heap=dump", "heap=all", "" };
    for (unsigned i = 0; i < sizeof heap / sizeof heap[0]; i++)
        CHECK(options_parse(heap[i], &o, err, sizeof err) == 0 &&
              options_check_implemented(&o, err, sizeof err) == 0);
    CHECK(options_parse("cpu=times,depth=8", &o, err, sizeof err) == 0);
    CHECK(o.cpu == CPU_TIMES && options_check_implemented(&o, err, sizeof err) == 0);
    CHECK(options_parse("cpu=old", &o, err, sizeof err) == 0);
    CHECK(o.cpu == CPU_OLD && o.heap == HEAP_OFF && options_check_implemented(&o, err, sizeof err) == 0);
    CHECK(options_parse("monitor=y,deadlock=500", &o, err, sizeof err) == 0);
    CHECK(o.monitor && o.deadlock_ms == 500 && o.heap == HEAP_OFF);
    CHECK(options_check_implemented(&o, err, sizeof err) == 0);
}

TEST(options_usage_lists_every_option)
{
    const char *names[] = { "heap=", "cpu=", "monitor=", "format=", "file=", "net=", "depth=",
                            "interval=", "cutoff=", "lineno=", "thread=", "doe=", "msa=",
                            "force=", "verbose=", "collapsed=", "pprof=", "flamegraph=", "sampler=",
                            "deadlock=", "jdk=", "include=", "exclude=", "loop=", "loop_keep=", "loop_mode=" };
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        CHECK(strstr(options_usage(), names[i]) != NULL);
}

TEST(options_whole_stack_outputs)
{
    CHECK(options_parse("cpu=samples,pprof=/tmp/p.pb.gz,flamegraph=/tmp/f.html", &o, err, sizeof err) == 0);
    CHECK_STR(options_output(&o, "pprof"), "/tmp/p.pb.gz");
    CHECK_STR(options_output(&o, "flamegraph"), "/tmp/f.html");
    CHECK(options_output(&o, "collapsed")[0] == '\0' && options_want_stacks(&o));
    CHECK(options_parse("cpu=samples", &o, err, sizeof err) == 0 && !options_want_stacks(&o));
    CHECK(options_parse("heap=sites,collapsed=c.txt", &o, err, sizeof err) == 0 && options_want_stacks(&o));
    CHECK(options_parse("monitor=y,flamegraph=f.html", &o, err, sizeof err) == 0);
    CHECK(options_parse("pprof=p.pb.gz", &o, err, sizeof err) == 0 && o.heap == HEAP_ALL);  /* HPROF's default */
    expect_error("cpu=samples,pprof=", "'pprof'");
    expect_error("cpu=samples,flamegraph=", "'flamegraph'");
    /* Nothing to show: the option at fault is named, with what to add. */
    CHECK(options_parse("cpu=times,pprof=p.pb.gz,collapsed=c.txt", &o, err, sizeof err) == 0 &&
          options_want_stacks(&o));
    expect_error("heap=dump,flamegraph=f.html", "cpu=samples,flamegraph=f.html");
    expect_error("heap=dump,collapsed=c.txt", "'collapsed='");
    /* cpu=old's traces are two frames, whatever the outputs want. */
    expect_error("cpu=old,pprof=p.pb.gz", "cpu=old");
    expect_error("cpu=old,heap=sites,collapsed=c.txt", "'collapsed='");
    /* jfr=: every collector with a profile, not only cpu=samples */
    CHECK(options_parse("monitor=y,jfr=r.jfr", &o, err, sizeof err) == 0 && options_want_stacks(&o));
    CHECK(options_parse("cpu=times,jfr=r.jfr", &o, err, sizeof err) == 0);
    CHECK(options_parse("wall=10,jfr=r.jfr", &o, err, sizeof err) == 0);
    CHECK(options_parse("heap=sites,heap_sample=4k,jfr=r.jfr", &o, err, sizeof err) == 0);
    expect_error("heap=dump,jfr=r.jfr", "jfr=");
}

TEST(options_heap_sample_sizes)
{
    CHECK(options_parse("heap=sites", &o, err, sizeof err) == 0 && o.heap_sample == 0);
    CHECK(options_parse("heap=sites,heap_sample=512k", &o, err, sizeof err) == 0 && o.heap_sample == 524288);
    CHECK(options_parse("heap=all,heap_sample=2M", &o, err, sizeof err) == 0 && o.heap_sample == 2097152);
    CHECK(options_parse("heap=sites,heap_sample=1000", &o, err, sizeof err) == 0 && o.heap_sample == 1000);
    expect_error("heap=sites,heap_sample=lots", "'heap_sample'");
    expect_error("heap=sites,heap_sample=-1", "'heap_sample'");
    expect_error("heap=sites,heap_sample=5g", "'heap_sample'");
    expect_error("heap=sites,heap_sample=4096m", "'heap_sample'");
    expect_error("heap=dump,heap_sample=512k", "heap=sites");
    expect_error("cpu=times,format=b", "format=a");
    expect_error("cpu=samples,heap_sample=512k", "heap=sites");
}

/* A load's options: the command word, reply=, and the options that remain. */
TEST(options_commands_split)
{
    static command_request r;
    CHECK(command_parse("cpu=samples,interval=1", &r, err, sizeof err) == 0);
    CHECK(r.command == COMMAND_START && !r.command_given && r.reply[0] == '\0');
    CHECK_STR(r.options, "cpu=samples,interval=1");
    CHECK(command_parse("stop,reply=/tmp/r.1,file=/tmp/x.txt", &r, err, sizeof err) == 0);
    CHECK(r.command == COMMAND_STOP && r.command_given);
    CHECK_STR(r.reply, "/tmp/r.1");
    CHECK_STR(r.options, "file=/tmp/x.txt");
    CHECK(options_parse(r.options, &o, err, sizeof err) == 0);
    CHECK(command_check(&r, &o, err, sizeof err) == 0);
    CHECK(command_parse("status", &r, err, sizeof err) == 0);
    CHECK(r.command == COMMAND_STATUS && r.options[0] == '\0');
    CHECK(command_parse("reset,cpu=times", &r, err, sizeof err) == 0);
    CHECK(options_parse(r.options, &o, err, sizeof err) == 0);
    CHECK(command_check(&r, &o, err, sizeof err) != 0);
    CHECK(strstr(err, "'reset' takes no options") != NULL);
    CHECK(command_parse("dump,depth=3", &r, err, sizeof err) == 0);
    CHECK(options_parse(r.options, &o, err, sizeof err) == 0);
    CHECK(command_check(&r, &o, err, sizeof err) != 0);
    CHECK(strstr(err, "only file=PATH") != NULL);
    CHECK(command_parse("start,reply=relative", &r, err, sizeof err) != 0);
    CHECK(strstr(err, "reply") != NULL);
    CHECK(command_parse("stopped=1", &r, err, sizeof err) == 0);      /* not a command word */
    CHECK(!r.command_given);
    CHECK_STR(r.options, "stopped=1");
    CHECK_STR(command_name(COMMAND_DUMP), "dump");
}

TEST(options_class_filters)
{
    CHECK(options_parse("cpu=times,exclude=java.*:jdk.*:com.example.Parser", &o, err, sizeof err) == 0);
    CHECK(o.exclude.n == 3 && o.include.n == 0);
    /* Prefixes end at the '*': java.* is java/..., not javax/... */
    CHECK(class_filter_matches(&o.exclude, "java/lang/String", 16));
    CHECK(!class_filter_matches(&o.exclude, "javax/swing/JButton", 19));
    CHECK(class_filter_matches(&o.exclude, "jdk/internal/misc/Unsafe", 24));
    /* An exact name: that class only, not its nested classes nor longer names. */
    CHECK(class_filter_matches(&o.exclude, "com/example/Parser", 18));
    CHECK(!class_filter_matches(&o.exclude, "com/example/Parser$Node", 23));
    CHECK(!class_filter_matches(&o.exclude, "com/example/ParserTest", 22));
    CHECK(!class_filter_matches(&o.exclude, "com/example", 11));
    CHECK(class_filter_times(&o.include, &o.exclude, "com/example/Main", 16, NULL, NULL));
    CHECK(!class_filter_times(&o.include, &o.exclude, "java/util/HashMap", 17, NULL, NULL));
    /* include: only those; exclude still wins inside them. */
    CHECK(options_parse("cpu=times,include=com.example.*,exclude=com.example.Parser*", &o, err, sizeof err) == 0);
    CHECK(class_filter_times(&o.include, &o.exclude, "com/example/Main", 16, NULL, NULL));
    CHECK(!class_filter_times(&o.include, &o.exclude, "com/example/Parser$Node", 23, NULL, NULL));
    CHECK(!class_filter_times(&o.include, &o.exclude, "org/other/Main", 14, NULL, NULL));
    CHECK(options_parse("cpu=old,include=*", &o, err, sizeof err) == 0 &&
          class_filter_times(&o.include, NULL, "a/B", 3, NULL, NULL));
    CHECK(class_filter_times(NULL, NULL, "a/B", 3, NULL, NULL));
    /* Which pattern matched, and each as the user wrote it (for the dump's note). */
    CHECK(options_parse("cpu=times,exclude=com.a.*:com.b.C:*", &o, err, sizeof err) == 0);
    CHECK(class_filter_which(&o.exclude, "com/b/C", 7) == 1 && class_filter_which(&o.exclude, "x", 1) == 2);
    char text[64];
    class_filter_pattern(&o.exclude, 0, text, sizeof text);
    CHECK_STR(text, "com.a.*");
    class_filter_pattern(&o.exclude, 1, text, sizeof text);
    CHECK_STR(text, "com.b.C");
    class_filter_pattern(&o.exclude, 2, text, sizeof text);
    CHECK_STR(text, "*");
    class_filter_pattern(&o.exclude, 0, text, 4);
    CHECK_STR(text, "com");
    /* Nested classes by '$'. */
    CHECK(options_parse("cpu=times,exclude=Outer$Inner", &o, err, sizeof err) == 0 &&
          class_filter_matches(&o.exclude, "Outer$Inner", 11));
}

TEST(options_jdk_calls)
{
    CHECK(options_parse("cpu=times", &o, err, sizeof err) == 0 && o.jdk_calls == JDK_CALLS_ALL);
    CHECK(options_parse("cpu=times,jdk=boundary", &o, err, sizeof err) == 0 && o.jdk_calls == JDK_CALLS_BOUNDARY);
    CHECK(options_parse("cpu=times,jdk=none", &o, err, sizeof err) == 0 && o.jdk_calls == JDK_CALLS_NONE);
    CHECK(options_parse("cpu=old,jdk=all", &o, err, sizeof err) == 0 && o.jdk_calls == JDK_CALLS_ALL);
    CHECK(options_parse("cpu=times,jdk=edge", &o, err, sizeof err) == -1 && strstr(err, "'jdk'") &&
          strstr(err, "boundary") && strstr(err, "none"));
    CHECK(options_parse("cpu=samples,jdk=boundary", &o, err, sizeof err) == -1 && strstr(err, "cpu=times"));
    CHECK(options_parse("heap=sites,jdk=none", &o, err, sizeof err) == -1 && strstr(err, "'jdk=none'") &&
          strstr(err, "cpu=times"));
}

TEST(options_class_filter_errors)
{
    CHECK(options_parse("cpu=samples,exclude=java.*", &o, err, sizeof err) == -1);
    CHECK(strstr(err, "'exclude='") && strstr(err, "cpu=times"));
    CHECK(options_parse("heap=sites,include=a.*", &o, err, sizeof err) == -1 && strstr(err, "'include='"));
    CHECK(options_parse("cpu=times,exclude=", &o, err, sizeof err) == -1 && strstr(err, "needs class names"));
    CHECK(options_parse("cpu=times,exclude=java.*::jdk.*", &o, err, sizeof err) == -1 && strstr(err, "empty"));
    CHECK(options_parse("cpu=times,exclude=java.*.Foo", &o, err, sizeof err) == -1 &&
          strstr(err, "java.*.Foo") && strstr(err, "only at the end"));
    CHECK(options_parse("cpu=times,exclude=java.", &o, err, sizeof err) == -1 && strstr(err, "java.*"));
    CHECK(options_parse("cpu=times,exclude=a..b", &o, err, sizeof err) == -1 && strstr(err, "a..b"));
    CHECK(options_parse("cpu=times,exclude=a/b", &o, err, sizeof err) == -1 && strstr(err, "a/b"));
    /* ',' instead of ':': the stray name is an unknown option, and the message says why. */
    CHECK(options_parse("cpu=times,exclude=java.*,jdk.*", &o, err, sizeof err) == -1 &&
          strstr(err, "'jdk.*'") && strstr(err, "with ':'"));
    CHECK(options_parse("cpu=times,include=a.B,c.D", &o, err, sizeof err) == -1 && strstr(err, "'c.D'"));
    char many[CLASS_FILTER_TEXT_MAX + 64];
    strcpy(many, "cpu=times,exclude=");
    while (strlen(many) < sizeof many - 8)
        strcat(many, "a.b.c:");
    strcat(many, "d");
    CHECK(options_parse(many, &o, err, sizeof err) == -1 && strstr(err, "too long"));
    strcpy(many, "cpu=times,exclude=");
    for (int i = 0; i < CLASS_FILTER_MAX + 1; i++)
        strcat(many, i ? ":x" : "x");
    CHECK(options_parse(many, &o, err, sizeof err) == -1 && strstr(err, "more than 64"));
}

TEST(options_heap_dumper)
{
    CHECK(options_parse("heap=all,format=b", &o, err, sizeof err) == 0 && o.heap_dumper == 'a');
    CHECK(options_parse("heap=all,format=b,heap_dumper=jvm", &o, err, sizeof err) == 0 && o.heap_dumper == 'j');
    CHECK(options_parse("heap=dump,format=b,heap_dumper=walk", &o, err, sizeof err) == 0 && o.heap_dumper == 'w');
    CHECK(options_parse("heap=all,heap_dumper=jvm", &o, err, sizeof err) != 0 && strstr(err, "format=b"));
    CHECK(options_parse("heap=sites,format=b,heap_dumper=jvm", &o, err, sizeof err) != 0);
    CHECK(options_parse("heap=all,format=b,cpu=samples,heap_dumper=jvm", &o, err, sizeof err) != 0);
    CHECK(options_parse("heap=all,format=b,heap_dumper=fast", &o, err, sizeof err) != 0 &&
          strstr(err, "'fast'") && strstr(err, "auto, jvm or walk"));
}
