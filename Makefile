# hprof: build the agent (build/libhprof.so), its sanitizer build, unit tests,
# and run the demo, the tests and the benchmark. `make help` lists targets.

CC        ?= gcc
# JDK headers, looked up when the recipe runs (after build/.jdk-ok installed a
# JDK if needed). -isystem: their old-style prototypes are not ours to warn on.
JNI_CFLAGS = -isystem "$$(scripts/find-jdk)/include" -isystem "$$(scripts/find-jdk)/include/linux"

WARN      = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2
BASE      = -std=c11 -D_GNU_SOURCE -fPIC -g $(WARN)
CFLAGS   ?= -O2
SAN_FLAGS = -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

# Pure C (no JVMTI): unit-tested on their own, also under ASan/UBSan.
PURE_SRC  = src/core/keytab.c src/core/idmap.c src/core/hidden_names.c src/core/ref_table.c src/core/tables.c src/core/trace_builder.c src/core/trace_cache.c src/core/stack_table.c src/snapshot/stack_profile.c src/options/options.c src/options/class_filter.c src/options/jvm_args.c \
            src/cpu/sample_queue.c src/cpu/cpu_collector.c src/cpu/code_map.c src/cpu/times_table.c \
            src/output/text_writer.c src/output/text_sections.c src/output/report_sections.c src/output/old_prof_writer.c src/output/profile_outputs.c src/output/output_file.c src/output/hprof_binary.c src/output/hprof_binary_heap.c src/output/hprof_binary_files.c src/output/hprof_patch_traces.c \
            src/output/net_sink.c src/output/net_report.c src/output/series.c \
            src/monitor/monitor_table.c src/monitor/deadlock.c src/monitor/vthread_pending.c src/heap/site_table.c src/heap/object_store.c $(BCI_SRC) \
            $(PROFILE_SRC) $(NATIVE_SRC)
# Native code, read from bytes (pure C): ELF symbol tables, x86-64 call-frame
# rules from .eh_frame, C++ demangling, /proc/self/maps lines. The sampler
# walks native stacks with these tables and names native frames with them.
NATIVE_SRC = $(wildcard src/native/*.c)
# The profile model and the writers over it (pprof, flame graph, collapsed):
# pure C, shared by the agent and build/hprof. The flame graph page's script
# and style sheet are embedded from their own files.
PROFILE_SRC = $(wildcard src/profile/*.c) build/flamegraph_assets.c
# The CPU sampler (JNI: AsyncGetCallTrace, GetEnv): the signal handler, its
# Java and native walks, the per-thread timers (src/sampler/sampler*.c).
SAMPLER_SRC = $(wildcard src/sampler/*.c)
# The options read the table of output formats (src/profile/formats.c), which
# names their writers: what a program that parses options links.
FORMATS_SRC = $(PROFILE_SRC) src/core/keytab.c src/core/idmap.c src/core/hidden_names.c
# The class-file rewriter: a pure library (bytes in, bytes out).
BCI_SRC   = $(wildcard src/bci/*.c)
MONITOR_AGENT_SRC = $(wildcard src/agent/monitor_*.c)
AGENT_SRC = $(PURE_SRC) $(SAMPLER_SRC) src/cpu/native_libs.c src/cpu/native_names.c src/cpu/thread_cpu.c src/agent/agent.c src/agent/agent_report.c src/agent/agent_dump.c src/agent/agent_commands.c src/agent/hprof_agent.c src/agent/jvmti_support.c src/agent/stack_walk_fast.c $(MONITOR_AGENT_SRC) \
            src/agent/events.c src/agent/class_rewrite.c src/agent/samples_agent.c src/agent/java_code.c src/agent/wall_agent.c src/agent/vthread_mounts.c src/agent/vthread_clock.c src/agent/times_agent.c src/agent/tracker_agent.c src/agent/heap_agent.c src/agent/heap_dump.c src/agent/heap_dump_records.c src/agent/heap_dump_sink.c src/agent/heap_dump_jvm.c src/agent/jvm_heap_dump.c src/agent/heap_all_dump.c src/agent/heap_walk.c src/agent/field_layout.c src/agent/class_loads.c src/options/command_reply.c build/tracker_classes.c
# cpu=times' tracker classes (java.lang.HprofTracker), compiled into java.base's
# package and embedded in the agent as byte arrays.
TRACKER_JAVA = $(wildcard src/agent/java/java/lang/*.java)
# build/hprof, the command-line tool: the attach client and its helpers are
# pure C (no JVMTI) and unit-tested too; hprof_main.c is the command front.
CLI_SRC   = src/cli/attach.c src/cli/perfdata.c src/cli/tempfiles.c src/cli/listen.c src/cli/listen_series.c src/cli/jvm_list.c
# The front end's analysis (hprof report, convert, diff): readers of HPROF
# text and binary files into src/profile's model, and the commands over them;
# pure C, unit-tested. text_writer (and the tables it reads) writes --to text.
# src/jfr reads JFR recordings, which src/reader turns into the same data.
READER_SRC = $(wildcard src/reader/*.c) $(wildcard src/jfr/*.c)
ANALYSIS_SRC = $(wildcard src/analysis/*.c)
# hprof heap: the object graph of a heap dump, dominators, retained sizes
# and paths to GC roots (src/heapgraph; pure C, unit-tested, fuzzed).
HEAPGRAPH_SRC = $(wildcard src/heapgraph/*.c) build/heap_page_assets.c
FRONT_SRC = src/cli/analyze_common.c src/cli/analyze_report.c src/cli/analyze_convert.c src/cli/analyze_heap.c \
            $(HEAPGRAPH_SRC) $(READER_SRC) $(ANALYSIS_SRC) $(PROFILE_SRC) src/core/tables.c src/core/stack_table.c src/core/keytab.c src/core/idmap.c src/core/hidden_names.c \
            src/output/text_writer.c src/output/text_sections.c src/output/output_file.c src/monitor/monitor_table.c
UNIT_SRC  = $(wildcard tests/unit/*.c)
HEADERS   = $(wildcard src/*/*.h) $(wildcard tests/unit/*.h)

.PHONY: all deps unit asan demo test bench bench-jvmpi clean help tools check-tools fuzz fuzz-libfuzzer jvmpi-test-agents
all: build/libhprof.so build/hprof build/libjvmpi.so build/include/jvmpi.h

help:
	@echo "make            build build/libhprof.so and build/hprof (installs a JDK 17 if missing)"
	@echo "                (build/hprof attach|start|stop|dump|reset|status <pid>: control the agent in a running JVM)"
	@echo "make demo       build and profile the bundled demo application, print the report"
	@echo "make test       build and run every test (unit, sanitizer, JDK 17 and 25) on pytest"
	@echo "make unit       build the unit tests (plain and ASan/UBSan)"
	@echo "make asan       build the agent with ASan/UBSan (build/asan/libhprof.so)"
	@echo "make bench      overhead benchmark against runs without the agent"
	@echo "make bench-jvmpi  a JVMPI heap profiler (as HPROF) against heap=sites/dump"
	@echo "make tools      build build/hprof-bci (rewrites .class files, jars, directories)"
	@echo "make check-tools  run hprof-bci on the fuzz seeds, a jar and HSQLDB; run the results"
	@echo "make fuzz       fuzz every parser of untrusted bytes (ASan/UBSan) for FUZZ_TIME=100 s each"
	@echo "                (make fuzz FUZZ_TIME=3600: an hour each; FUZZ_TARGETS=options: one target)"
	@echo "make fuzz-libfuzzer  the same with clang's libFuzzer"

deps:
	@scripts/ensure-deps

# The JDK headers come from the installed JDK: make sure there is one first.
build/.jdk-ok:
	@scripts/ensure-deps
	@mkdir -p build && touch $@

build/tracker_classes.c: build/.jdk-ok $(TRACKER_JAVA) scripts/embed-classes
	@rm -rf build/tracker && mkdir -p build/tracker
	"$$(scripts/find-jdk)/bin/javac" -nowarn --patch-module java.base=src/agent/java -d build/tracker $(TRACKER_JAVA)
	scripts/embed-classes $@ hprof_tracker_class=build/tracker/java/lang/HprofTracker.class \
	    hprof_thread_state_class=build/tracker/java/lang/HprofThreadState.class

build/flamegraph_assets.c: src/profile/flamegraph.js src/profile/flamegraph.css scripts/embed-classes
	@mkdir -p build
	scripts/embed-classes $@ flamegraph_js=src/profile/flamegraph.js flamegraph_css=src/profile/flamegraph.css

# hprof heap --html: the page's script and style sheet
build/heap_page_assets.c: src/heapgraph/heap_page.js src/heapgraph/heap_page.css scripts/embed-classes
	@mkdir -p build
	scripts/embed-classes $@ heap_page_js=src/heapgraph/heap_page.js heap_page_css=src/heapgraph/heap_page.css

build/libhprof.so: build/.jdk-ok $(AGENT_SRC) $(HEADERS) Makefile
	@mkdir -p build
	$(CC) $(BASE) $(CFLAGS) $(JNI_CFLAGS) \
	    -fvisibility=hidden -shared -o $@ $(AGENT_SRC) -lpthread -lrt -ldl -lm -lz

# The JVMPI layer (src/jvmpi): runs agents written to JVMPI on this JVM, as
# one collector under the agent's orchestrator (src/agent/agent.c), on its
# event fan-out, tables and class-file rewriter. Its header is installed
# for those agents: cc -Ibuild/include.
JVMPI_SRC  = $(wildcard src/jvmpi/*.c) $(PURE_SRC) src/agent/agent.c src/agent/agent_report.c src/agent/agent_dump.c src/agent/agent_commands.c src/agent/events.c src/agent/field_layout.c src/agent/heap_walk.c \
             src/options/command_reply.c src/agent/class_rewrite.c src/agent/jvmti_support.c src/agent/stack_walk_fast.c src/sampler/async_trace.c build/jvmpi_tracker_class.c
JVMPI_JAVA = $(wildcard src/jvmpi/java/java/lang/*.java)

build/jvmpi_tracker_class.c: build/.jdk-ok $(JVMPI_JAVA) scripts/embed-classes
	@rm -rf build/jvmpi_tracker && mkdir -p build/jvmpi_tracker
	"$$(scripts/find-jdk)/bin/javac" -nowarn --patch-module java.base=src/jvmpi/java -d build/jvmpi_tracker $(JVMPI_JAVA)
	scripts/embed-classes $@ jvmpi_tracker_class=build/jvmpi_tracker/java/lang/JvmpiTracker.class

build/libjvmpi.so: build/.jdk-ok $(JVMPI_SRC) $(HEADERS) $(wildcard src/jvmpi/*.h) Makefile
	@mkdir -p build
	$(CC) $(BASE) $(CFLAGS) $(JNI_CFLAGS) \
	    -fvisibility=hidden -shared -Wl,--no-undefined -o $@ $(JVMPI_SRC) -lpthread -lrt -ldl -lm -lz

build/asan/libjvmpi.so: build/.jdk-ok $(JVMPI_SRC) $(HEADERS) $(wildcard src/jvmpi/*.h) Makefile
	@mkdir -p build/asan
	$(CC) $(BASE) $(SAN_FLAGS) $(JNI_CFLAGS) \
	    -fvisibility=hidden -shared -o $@ $(JVMPI_SRC) -lpthread -lrt -ldl -lm -lz

build/include/jvmpi.h: src/jvmpi/jvmpi.h
	@mkdir -p build/include
	cp $< $@

# Compiles tests/jvmpi/header_check.c, which names everything in jvmpi.h.
build/tests/jvmpi_header_check: build/.jdk-ok build/include/jvmpi.h tests/jvmpi/header_check.c Makefile
	@mkdir -p build/tests
	$(CC) -std=c11 -pedantic $(WARN) $(JNI_CFLAGS) -Ibuild/include -o $@ tests/jvmpi/header_check.c

asan: build/asan/libhprof.so build/asan/libjvmpi.so
build/asan/libhprof.so: build/.jdk-ok $(AGENT_SRC) $(HEADERS) Makefile
	@mkdir -p build/asan
	$(CC) $(BASE) $(SAN_FLAGS) $(JNI_CFLAGS) \
	    -fvisibility=hidden -shared -o $@ $(AGENT_SRC) -lpthread -lrt -ldl -lm -lz

unit: build/unit/unit_tests build/asan/unit_tests build/tsan/unit_tests
build/unit/unit_tests: $(PURE_SRC) $(CLI_SRC) $(READER_SRC) $(HEAPGRAPH_SRC) $(ANALYSIS_SRC) $(UNIT_SRC) $(HEADERS) Makefile
	@mkdir -p build/unit
	$(CC) $(BASE) $(CFLAGS) -Isrc -o $@ $(PURE_SRC) $(CLI_SRC) $(READER_SRC) $(HEAPGRAPH_SRC) $(ANALYSIS_SRC) $(UNIT_SRC) -lpthread -lm -lz
build/asan/unit_tests: $(PURE_SRC) $(CLI_SRC) $(READER_SRC) $(HEAPGRAPH_SRC) $(ANALYSIS_SRC) $(UNIT_SRC) $(HEADERS) Makefile
	@mkdir -p build/asan
	$(CC) $(BASE) $(SAN_FLAGS) -Isrc -o $@ $(PURE_SRC) $(CLI_SRC) $(READER_SRC) $(HEAPGRAPH_SRC) $(ANALYSIS_SRC) $(UNIT_SRC) -lpthread -lm -lz

# ThreadSanitizer: the lock-free and multi-threaded parts (object store,
# site table, sample queue) under real threads.
build/tsan/unit_tests: $(PURE_SRC) $(CLI_SRC) $(READER_SRC) $(HEAPGRAPH_SRC) $(ANALYSIS_SRC) $(UNIT_SRC) $(HEADERS) Makefile
	@mkdir -p build/tsan
	$(CC) $(BASE) -g -O1 -fsanitize=thread -Isrc -o $@ $(PURE_SRC) $(CLI_SRC) $(READER_SRC) $(HEAPGRAPH_SRC) $(ANALYSIS_SRC) $(UNIT_SRC) -lpthread -lm -lz

demo: build/libhprof.so build/hprof
	@demo/run

# The suite runs on Debian's pytest (tests/conftest.py), installed here if missing;
# PYTEST_ARGS adds pytest options (make test PYTEST_ARGS="-k cpu_split --jdk 17").
PYTEST_PYTHON ?= /usr/bin/python3
test: build/libhprof.so build/hprof-bci build/hprof build/tests/echo_agent.so build/tests/libjni_alloc.so build/tests/libjni_burn.so build/tests/libvirtual_pinning.so jvmpi-test-agents
	@scripts/ensure-pytest $(PYTEST_PYTHON)
	@$(PYTEST_PYTHON) -m pytest --ensure-tools $(PYTEST_ARGS)

bench: build/libhprof.so build/libjvmpi.so build/bench/libjvmpi_counter.so
	@python3 bench/run

# A JVMPI agent profiling the heap as HPROF did, through the layer, against
# heap=sites/dump/all (bench/jvmpi/run --help for its options).
bench-jvmpi: all jvmpi-test-agents
	@python3 bench/jvmpi/run

# The command-line tool: attaches to a running JVM (HotSpot's attach protocol,
# in C) and tells the agent what to do (src/cli/hprof_main.c). No JDK needed.
build/hprof: src/cli/hprof_main.c $(CLI_SRC) $(FRONT_SRC) src/output/net_sink.c src/output/series.c src/output/profile_outputs.c $(HEADERS) Makefile
	@mkdir -p build
	$(CC) $(BASE) $(CFLAGS) -Isrc -o $@ src/cli/hprof_main.c $(CLI_SRC) $(FRONT_SRC) src/output/net_sink.c \
	    src/output/series.c src/output/profile_outputs.c -lpthread -lm -lz

# A stand-in agent for tests/test_attach_cli.py: answers build/hprof's
# commands through the reply file without being the real agent.
build/tests/echo_agent.so: build/.jdk-ok tests/attach/echo_agent.c Makefile
	@mkdir -p build/tests
	$(CC) $(BASE) $(CFLAGS) $(JNI_CFLAGS) -shared -o $@ tests/attach/echo_agent.c

# Natives of tests/java/JniAlloc.java (heap_sites_jni).
build/tests/libjni_alloc.so: build/.jdk-ok tests/jni/jni_alloc.c Makefile
	@mkdir -p build/tests
	$(CC) $(BASE) $(CFLAGS) $(JNI_CFLAGS) -shared -o $@ tests/jni/jni_alloc.c

# Natives of tests/java/JniBurn.java (native_jni): no frame pointers, so that
# the sampler must unwind them by their .eh_frame rules.
build/tests/libjni_burn.so: build/.jdk-ok tests/jni/jni_burn.c Makefile
	@mkdir -p build/tests
	$(CC) $(BASE) -O2 -fomit-frame-pointer $(JNI_CFLAGS) -shared -o $@ tests/jni/jni_burn.c

# Natives of tests/java/VirtualPinning.java (vthread_pinning).
build/tests/libvirtual_pinning.so: build/.jdk-ok tests/jni/virtual_pinning.c Makefile
	@mkdir -p build/tests
	$(CC) $(BASE) $(CFLAGS) $(JNI_CFLAGS) -shared -o $@ tests/jni/virtual_pinning.c

# Writes known and synthetic profiles through the pprof, collapsed and flame
# graph writers, for tests/test_writers.py (go tool pprof, flamegraph.pl,
# Chromium) and bench/writers.
build/tests/profile_writers: tests/writers/profile_writers.c $(PROFILE_SRC) $(HEADERS) Makefile
	@mkdir -p build/tests
	$(CC) $(BASE) $(CFLAGS) -Isrc -o $@ tests/writers/profile_writers.c $(PROFILE_SRC) src/core/keytab.c src/core/idmap.c src/core/hidden_names.c -lz

# The class rewriter as a command-line tool: hprof-bci INPUT OUTPUT, where
# INPUT is a .class file, a jar or a directory (src/tools/hprof_bci*.c).
TOOLS_SRC = $(wildcard src/tools/*.c)
tools: build/hprof-bci
build/hprof-bci: build/.jdk-ok $(TOOLS_SRC) $(BCI_SRC) $(HEADERS) Makefile
	@mkdir -p build
	$(CC) $(BASE) $(CFLAGS) -Isrc -o $@ $(TOOLS_SRC) $(BCI_SRC) -lz

check-tools: build/hprof-bci build/fuzz/seeds/.ok
	@tests/fuzz/check-hprof-bci.sh

# Fuzzing (tests/fuzz, README "Reliability"): one target per parser of
# untrusted bytes, each a libFuzzer entry point (LLVMFuzzerTestOneInput) also
# built with gcc, ASan/UBSan and the standalone driver tests/fuzz/fuzz_main.c:
#   bci            the class-file rewriter (src/bci)
#   options        the agent's option parser (src/options)
#   attach         the attach path: the agent's command parser, build/hprof's
#                  readers of the JVM's answers and /proc files (src/cli/attach.c)
#   net            hprof listen's reader of the agent's frames (src/cli/listen.c)
#   text_reader    hprof report/convert on HPROF text files (src/reader)
#   binary_reader  the same on HPROF binary files
#   jfr_reader     the same on JFR recordings (src/jfr)
#   elf            the ELF reader: symbols, call-frame rules, demangler (src/native)
#   heap           hprof heap on HPROF heap dumps: graph, dominators, paths (src/heapgraph)
#   heap_text      the same on HPROF text heap dumps (src/heapgraph/heap_text*.c)
#   jvm_dump       the patching of the JVM's own heap dump (src/output/hprof_binary_files.c)
#   patch_traces   heap=all's traces set in the JVM's heap dump (src/output/hprof_patch_traces.c)
# `make fuzz`: every target (or FUZZ_TARGETS=...) for FUZZ_TIME seconds each
# (an hour each: make fuzz FUZZ_TIME=3600) over FUZZ_JOBS processes, at most
# FUZZ_ITERS inputs, all derived from FUZZ_SEED (a run repeats exactly;
# FUZZ_SEED=... to explore). Seeds: tests/fuzz/corpus/<target> (bci: class
# files compiled below) and the regression inputs tests/fuzz/regress/<target>.
# A crashing input is saved as build/fuzz/crash-*; `build/fuzz/fuzz_<target>
# FILE` replays it. `make test` runs each target for a fixed number of inputs.
FUZZ_TARGETS ?= bci options attach net text_reader binary_reader jfr_reader elf heap heap_text jvm_dump patch_traces
FUZZ_ITERS ?= 1000000000
FUZZ_JOBS  ?= 2
FUZZ_SEED  ?= 1
FUZZ_TIME  ?= 100

FUZZ_SRC_bci           = $(BCI_SRC)
FUZZ_SRC_options       = src/options/options.c src/options/class_filter.c src/output/series.c $(FORMATS_SRC)
FUZZ_SRC_attach        = $(CLI_SRC) src/options/options.c src/options/class_filter.c src/output/net_sink.c src/output/series.c $(FORMATS_SRC)
FUZZ_SRC_net           = src/cli/listen.c src/cli/listen_series.c src/output/net_sink.c src/output/series.c
FUZZ_SRC_text_reader   = $(FRONT_SRC)
FUZZ_SRC_binary_reader = $(FRONT_SRC)
FUZZ_SRC_jfr_reader    = $(FRONT_SRC)
FUZZ_SRC_elf           = $(NATIVE_SRC)
FUZZ_SRC_heap          = $(HEAPGRAPH_SRC)
FUZZ_SRC_heap_text     = $(HEAPGRAPH_SRC)
FUZZ_SRC_jvm_dump      = src/output/hprof_binary.c src/output/hprof_binary_heap.c src/output/hprof_binary_files.c
FUZZ_SRC_patch_traces  = src/output/hprof_patch_traces.c
FUZZ_FILE_bci           = tests/fuzz/fuzz_bci.c
FUZZ_FILE_elf           = tests/fuzz/fuzz_elf.c
FUZZ_FILE_jvm_dump      = tests/fuzz/fuzz_jvm_dump.c
FUZZ_FILE_patch_traces  = tests/fuzz/fuzz_patch_traces.c
FUZZ_FILE_options       = tests/fuzz/fuzz_options.c
FUZZ_FILE_attach        = tests/fuzz/fuzz_attach.c
FUZZ_FILE_net           = tests/fuzz/fuzz_net.c
FUZZ_FILE_text_reader   = tests/fuzz/fuzz_reader.c
FUZZ_FILE_binary_reader = tests/fuzz/fuzz_reader.c
FUZZ_FILE_jfr_reader    = tests/fuzz/fuzz_reader.c
FUZZ_FILE_heap          = tests/fuzz/fuzz_heap.c
FUZZ_FILE_heap_text     = tests/fuzz/fuzz_heap.c
FUZZ_FLAGS_binary_reader = -DFUZZ_READER_BINARY
FUZZ_FLAGS_jfr_reader    = -DFUZZ_READER_JFR
FUZZ_FLAGS_heap_text      = -DFUZZ_HEAP_TEXT
FUZZ_LIBS = -lpthread -lm -lz
define FUZZ_TARGET_RULES
build/fuzz/fuzz_$(1): tests/fuzz/fuzz_main.c tests/fuzz/fuzz_target.h $$(FUZZ_FILE_$(1)) $$(FUZZ_SRC_$(1)) $$(HEADERS) Makefile
	@mkdir -p build/fuzz
	gcc $$(BASE) $$(SAN_FLAGS) -Isrc $$(FUZZ_FLAGS_$(1)) -o $$@ $$(FUZZ_FILE_$(1)) tests/fuzz/fuzz_main.c $$(FUZZ_SRC_$(1)) $$(FUZZ_LIBS)

build/fuzz/fuzz_$(1)_libfuzzer: tests/fuzz/fuzz_target.h $$(FUZZ_FILE_$(1)) $$(FUZZ_SRC_$(1)) $$(HEADERS) Makefile
	@mkdir -p build/fuzz
	@command -v clang >/dev/null || { echo "make fuzz-libfuzzer: clang not found (apt-get install clang libclang-rt-14-dev)"; exit 1; }
	clang $$(BASE) -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	    -Isrc $$(FUZZ_FLAGS_$(1)) -o $$@ $$(FUZZ_FILE_$(1)) $$(FUZZ_SRC_$(1)) $$(FUZZ_LIBS)
endef
ALL_FUZZ_TARGETS = bci options attach net text_reader binary_reader jfr_reader elf heap heap_text jvm_dump patch_traces
$(foreach t,$(ALL_FUZZ_TARGETS),$(eval $(call FUZZ_TARGET_RULES,$(t))))

fuzz: $(foreach t,$(FUZZ_TARGETS),build/fuzz/fuzz_$(t)) build/fuzz/seeds/.ok
	@set -e; for t in $(FUZZ_TARGETS); do \
	    echo "== fuzz_$$t: $(FUZZ_TIME) s"; \
	    build/fuzz/fuzz_$$t -j $(FUZZ_JOBS) -n $(FUZZ_ITERS) -s $(FUZZ_SEED) -t $(FUZZ_TIME) \
	        -o build/fuzz $$(case $$t in bci) echo build/fuzz/seeds $(wildcard build/tests/classes);; \
	                      *) echo tests/fuzz/corpus/$$t;; esac) $$(ls -d tests/fuzz/regress/$$t 2>/dev/null); \
	done

# libFuzzer: clang, and its runtime (Debian: libclang-rt-14-dev). Not needed by
# `make fuzz` or `make test`. New corpus inputs go to build/fuzz/corpus-<target>.
fuzz-libfuzzer: $(foreach t,$(FUZZ_TARGETS),build/fuzz/fuzz_$(t)_libfuzzer) build/fuzz/seeds/.ok
	@set -e; for t in $(FUZZ_TARGETS); do \
	    mkdir -p build/fuzz/corpus-$$t; \
	    build/fuzz/fuzz_$${t}_libfuzzer -max_total_time=$(FUZZ_TIME) -seed=$(FUZZ_SEED) \
	        -artifact_prefix=build/fuzz/ build/fuzz/corpus-$$t \
	        $$(case $$t in bci) echo build/fuzz/seeds;; *) echo tests/fuzz/corpus/$$t;; esac) \
	        $$(ls -d tests/fuzz/regress/$$t 2>/dev/null); \
	done

# Seeds: tests/fuzz/seeds compiled for class versions 52 (Java 8) and 61
# (Java 17, with debug tables), and once (it is slow to fuzz) a generated
# method near the 32 KiB branch-offset limit. The driver also takes
# build/tests/classes if present.
build/fuzz/seeds/.ok: build/.jdk-ok $(wildcard tests/fuzz/seeds/*) Makefile
	@rm -rf build/fuzz/seeds build/fuzz/gen && mkdir -p build/fuzz/seeds build/fuzz/gen
	tests/fuzz/seeds/gen-big.sh build/fuzz/gen
	"$$(scripts/find-jdk)/bin/javac" --release 8 -d build/fuzz/seeds/v52 tests/fuzz/seeds/FuzzSeeds.java
	"$$(scripts/find-jdk)/bin/javac" --release 17 -g -d build/fuzz/seeds/v61 \
	    tests/fuzz/seeds/*.java build/fuzz/gen/BigMethod.java
	@touch $@

clean:
	rm -rf build

# The JVMPI agent bench/run measures the layer with (configs jvmpi-times, jvmpi-alloc).
build/bench/libjvmpi_counter.so: bench/jvmpi/counting_agent.c build/include/jvmpi.h build/.jdk-ok Makefile
	@mkdir -p build/bench
	$(CC) -std=c11 -D_GNU_SOURCE -fPIC -shared -O2 $(WARN) $(JNI_CFLAGS) -Ibuild/include -o $@ $<

# JVMPI agents written to the specification, for tests/test_jvmpi_*.py,
# compiled against the installed header only.
JVMPI_TEST_AGENTS = $(patsubst tests/jvmpi/%.c,build/tests/jvmpi/lib%.so,$(filter-out tests/jvmpi/header_check.c,$(wildcard tests/jvmpi/*.c)))
jvmpi-test-agents: $(JVMPI_TEST_AGENTS) build/tests/jvmpi_header_check
build/tests/jvmpi/lib%.so: tests/jvmpi/%.c tests/jvmpi/agent_support.h tests/jvmpi/dump_reader.h build/include/jvmpi.h build/.jdk-ok Makefile
	@mkdir -p build/tests/jvmpi
	$(CC) -std=c11 -D_GNU_SOURCE -fPIC -shared -g $(WARN) $(JNI_CFLAGS) -Ibuild/include -o $@ $<
