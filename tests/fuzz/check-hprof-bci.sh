#!/bin/sh
# End-to-end check of build/hprof-bci (make check-tools): rewrite compiled
# classes as a directory, a single class, a jar and (if installed) HSQLDB's
# jar, with the counting tracker tests/fuzz/tracker/bcitest/Tracker.java; run
# each result (the JVM verifies every rewritten class) and compare its output
# with the original's. Needs build/hprof-bci and build/fuzz/seeds (make).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
jdk=$(scripts/find-jdk)
java="$jdk/bin/java"
tool=build/hprof-bci
work=build/fuzz/check
rm -rf "$work"
mkdir -p "$work/tracker" "$work/hsql"
"$jdk/bin/javac" -d "$work/tracker" tests/fuzz/tracker/bcitest/Tracker.java
fails=0

fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# run NAME CLASSPATH MAIN EXPECTED_STDOUT: runs MAIN with the tracker and
# checks its stdout and that every counted method entry had its exit.
run() {
    name=$1 cp=$2 main=$3 expect=$4
    if ! "$java" -cp "$cp:$work/tracker" "$main" >"$work/$name.out" 2>"$work/$name.err"; then
        fail "$name: $main exited with an error:"; sed 's/^/    /' "$work/$name.err" | head -20
        return
    fi
    if ! cmp -s "$work/$name.out" "$expect"; then
        fail "$name: output differs from the original's"; diff "$expect" "$work/$name.out" | head
        return
    fi
    counts=$(grep '^bcitest.Tracker:' "$work/$name.err" || true)
    entries=$(echo "$counts" | sed -n 's/.*entries=\([0-9]*\).*/\1/p')
    exits=$(echo "$counts" | sed -n 's/.*exits=\([0-9]*\).*/\1/p')
    if [ -z "$entries" ] || [ "$entries" = 0 ] || [ "$entries" != "$exits" ]; then
        fail "$name: tracker counts wrong: ${counts:-none}"
        return
    fi
    echo "PASS $name ($counts)"
}

# Directories of classes: version 52 and 61, all three kinds of calls.
for v in v52 v61; do
    mains=FuzzSeeds
    [ "$v" = v61 ] && mains="FuzzSeeds Seeds17 BigMethod"
    for main in $mains; do
        "$java" -cp "build/fuzz/seeds/$v" "$main" >"$work/$v-$main.expected"
    done
    if "$tool" --quiet --entry-exit --newarray --object-init --tracker bcitest/Tracker \
            --ids "$work/$v.ids" "build/fuzz/seeds/$v" "$work/$v"; then
        for main in $mains; do
            run "dir-$v-$main" "$work/$v" "$main" "$work/$v-$main.expected"
        done
    else
        fail "dir-$v: hprof-bci exited with $?"
    fi
done

# --ids: one line per id, ids 0..N-1 in order, four fields.
if awk 'NF != 4 || $1 != NR - 1 { bad = 1 } END { exit bad || NR == 0 }' "$work/v61.ids"; then
    echo "PASS ids ($(wc -l <"$work/v61.ids") methods)"
else
    fail "ids: $work/v61.ids is not '<id> <class> <method> <descriptor>' with ids 0..N-1"
fi

# A single class file, into a copy of the original classes.
cp -r build/fuzz/seeds/v61 "$work/single"
if "$tool" --quiet --tracker bcitest.Tracker build/fuzz/seeds/v61/FuzzSeeds.class \
        "$work/single/FuzzSeeds.class"; then
    run single-class "$work/single" FuzzSeeds "$work/v61-FuzzSeeds.expected"
else
    fail "single-class: hprof-bci exited with $?"
fi

# A jar written by the jar tool (entries with data descriptors), plus a
# class that cannot be rewritten: reported, copied unchanged, exit status 1.
mkdir -p "$work/jarin"
cp -r build/fuzz/seeds/v61/. "$work/jarin/"
printf 'not a class' >"$work/jarin/Broken.class"
"$jdk/bin/jar" cfe "$work/seeds.jar" FuzzSeeds -C "$work/jarin" .
status=0
"$tool" --quiet --tracker bcitest/Tracker "$work/seeds.jar" "$work/seeds-bci.jar" \
    2>"$work/jar.err" || status=$?
if [ "$status" != 1 ] || ! grep -q 'seeds.jar!Broken.class: ' "$work/jar.err"; then
    fail "jar: expected exit status 1 and a message about Broken.class, got $status:"
    cat "$work/jar.err"
fi
"$jdk/bin/jar" tf "$work/seeds.jar" >"$work/jar-in.list"
if ! "$jdk/bin/jar" tf "$work/seeds-bci.jar" >"$work/jar-out.list" ||
        ! cmp -s "$work/jar-in.list" "$work/jar-out.list"; then
    fail "jar: 'jar tf' of the output differs from the input's"
fi
(mkdir -p "$work/jar-x" && cd "$work/jar-x" && "$jdk/bin/jar" xf ../seeds-bci.jar)
if ! cmp -s "$work/jar-x/Broken.class" "$work/jarin/Broken.class"; then
    fail "jar: Broken.class not copied unchanged"
fi
run jar "$work/seeds-bci.jar" FuzzSeeds "$work/v61-FuzzSeeds.expected"

# HSQLDB: a real library, about 700 classes.
hsqldb=/usr/share/java/hsqldb.jar
if [ -f "$hsqldb" ]; then
    "$jdk/bin/javac" -d "$work/hsql" tests/fuzz/check/HsqlCheck.java
    "$java" -cp "$hsqldb:$work/hsql" HsqlCheck >"$work/hsql.expected"
    if "$tool" --quiet --tracker bcitest/Tracker "$hsqldb" "$work/hsqldb-bci.jar"; then
        run hsqldb "$work/hsqldb-bci.jar:$work/hsql" HsqlCheck "$work/hsql.expected"
    else
        fail "hsqldb: hprof-bci exited with $?"
    fi
else
    echo "SKIP hsqldb ($hsqldb not installed)"
fi

if [ "$fails" -ne 0 ]; then
    echo "$fails failed"
    exit 1
fi
echo "all passed"
