#!/bin/sh
# Writes BigMethod.java: a loop whose body is close to 32 KiB of bytecode and
# allocates an array per statement, so instrumenting the allocations pushes
# the loop's branches past the 16-bit offset range (goto_w and inverted
# conditionals). Its main prints a checksum that instrumenting must not change.
# usage: gen-big.sh OUTPUT_DIR
set -eu
out="$1/BigMethod.java"
{
    echo "public class BigMethod {"
    echo "    static long run(int n) {"
    echo "        long s = 0;"
    echo "        for (int i = 0; i < n; i++) {"
    echo "            if ((i & 1) == 0) {"
    i=0
    while [ $i -lt 1700 ]; do
        echo "                s += new int[(i + $i) & 7].length + $i;"
        i=$((i + 1))
    done
    echo "            } else { s -= 3; }"
    echo "        }"
    echo "        return s;"
    echo "    }"
    echo "    public static void main(String[] a) { System.out.println(\"BigMethod checksum \" + run(9)); }"
    echo "}"
} > "$out"
