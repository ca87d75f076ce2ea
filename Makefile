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
PURE_SRC  = src/core/keytab.c src/core/tables.c src/core/trace_builder.c src/options/options.c \
            src/cpu/sample_queue.c src/cpu/cpu_collector.c \
            src/output/text_writer.c src/output/collapsed_writer.c src/output/output_file.c \
            src/monitor/monitor_table.c src/monitor/deadlock.c
AGENT_SRC = $(PURE_SRC) src/cpu/sampler.c src/agent/agent.c src/agent/jvmti_support.c src/agent/monitor_agent.c
UNIT_SRC  = $(wildcard tests/unit/*.c)
HEADERS   = $(wildcard src/*/*.h) $(wildcard tests/unit/*.h)

.PHONY: all deps unit asan demo test bench clean help
all: build/libhprof.so

help:
	@echo "make            build build/libhprof.so (installs a JDK 17 if missing)"
	@echo "make demo       build and profile the bundled demo application, print the report"
	@echo "make test       build and run every test (unit, sanitizer, JDK 17 and 25)"
	@echo "make unit       build the unit tests (plain and ASan/UBSan)"
	@echo "make asan       build the agent with ASan/UBSan (build/asan/libhprof.so)"
	@echo "make bench      overhead benchmark against runs without the agent"

deps:
	@scripts/ensure-deps

# The JDK headers come from the installed JDK: make sure there is one first.
build/.jdk-ok:
	@scripts/ensure-deps
	@mkdir -p build && touch $@

build/libhprof.so: build/.jdk-ok $(AGENT_SRC) $(HEADERS) Makefile
	@mkdir -p build
	$(CC) $(BASE) $(CFLAGS) $(JNI_CFLAGS) \
	    -fvisibility=hidden -shared -o $@ $(AGENT_SRC) -lpthread -lrt -ldl

asan: build/asan/libhprof.so
build/asan/libhprof.so: build/.jdk-ok $(AGENT_SRC) $(HEADERS) Makefile
	@mkdir -p build/asan
	$(CC) $(BASE) $(SAN_FLAGS) $(JNI_CFLAGS) \
	    -fvisibility=hidden -shared -o $@ $(AGENT_SRC) -lpthread -lrt -ldl

unit: build/unit/unit_tests build/asan/unit_tests
build/unit/unit_tests: $(PURE_SRC) $(UNIT_SRC) $(HEADERS) Makefile
	@mkdir -p build/unit
	$(CC) $(BASE) $(CFLAGS) -Isrc -o $@ $(PURE_SRC) $(UNIT_SRC) -lpthread
build/asan/unit_tests: $(PURE_SRC) $(UNIT_SRC) $(HEADERS) Makefile
	@mkdir -p build/asan
	$(CC) $(BASE) $(SAN_FLAGS) -Isrc -o $@ $(PURE_SRC) $(UNIT_SRC) -lpthread

demo: build/libhprof.so
	@demo/run

test: build/libhprof.so
	@python3 tests/run.py

bench: build/libhprof.so
	@python3 bench/run

clean:
	rm -rf build
