#!/usr/bin/env python3
"""Exact checks of a heap dump of tests/java/HeapShape.java, read with
tests/hprof_reader.py.

    import hprof_reader, heap_dump_check
    d = hprof_reader.read(path)
    heap_dump_check.check_heap_shape(d, Fail)            # raises Fail(reason)
    diffs = heap_dump_check.compare_with_histogram(d, jcmd_histogram_text)

check_heap_shape() asserts what HeapShape.java documents, exactly: class
shapes (fields, superclasses, instance sizes), instance counts, every Node's
field values and the next-chain, the name strings, the Object[] extras, the
777 int[10] arrays and their contents, the 3 Leafs including the shadowed
field, every static of HeapShape, and that Dump.check() found no problem.

Dumps written by the JVM itself (jcmd GC.heap_dump) have three known quirks,
accepted only with jvm_quirks=True and only in the exact form verified here:
  * JDK 17 writes a second LOAD CLASS (same id, same name) for array classes
    (problem kind 'load_class_again'; accepted if every such class is an
    array class);
  * with CDS (the default), the archived-heap roots array - one Object[] held
    by a JNI global root - references objects that are not in the dump (they
    look like mirrors of archived classes that are not loaded: the JVM
    writes java.lang.Class objects only as CLASS DUMPs of loaded classes).
    Problem kind 'dangling'; accepted if every dangling reference comes from
    one Object[] whose only referrer is a jni_global root.  -Xshare:off
    removes them.  (The histogram counts those mirrors: its java.lang.Class
    count exceeds the dump's by exactly the number of distinct dangling ids.)
  * CLASS DUMPs carry pseudo static fields '<resolved_references>' and
    '<init_lock>' (objects) that are not Java fields.
  * in a JVM whose boot classes were retransformed (any agent that rewrites
    them: heap=sites, heap=all), the JVM names each such class twice, the
    second time with a LOAD CLASS and a ROOT STICKY CLASS of an id that has
    no CLASS DUMP (presumably the Class object of the class's version from
    before the retransformation, not in the heap; not verified in HotSpot's
    code). Seen in `jcmd GC.heap_dump`'s file of such a JVM too (JDK 17:
    355 in heap=all's file of AllocTruth, and in jcmd's file of a small
    program under heap=sites; none without the agent). Problem kind
    'root_dangling'; accepted if the root is a sticky class whose id names
    a class (LOAD CLASS) that has another id with a CLASS DUMP.
Several dumps of the JVM's dumper in one file (the agent's file after two
`dump` requests or SIGQUITs; each is a whole JVM dump, class serials moved
to a range of its own) repeat what each JVM dump defines for itself, only
with len(heap_dumps) > 1:
  * the UTF8 names of its symbols, by the same ids ('utf8_twice'; accepted
    only with the same text);
  * its threads' STACK TRACE serials and STACK FRAME ids, numbered from 1 in
    every dump ('trace_twice', 'frame_twice'; accepted below 0x10000, far
    under the agent's own);
  * classes are named by their Class object's address, which a GC may give
    another class by the next dump ('load_class_conflict'; accepted between
    LOAD CLASS records of two different dumps' serial ranges).
"""

import collections
import re
import struct
import sys

import hprof_reader as H

NODES = 12345
INT_ARRAYS = 777
INT_ARRAY_LEN = 10
LEAVES = 3
# HeapShape's statics: name -> (type, value).  Object ones are checked apart.
STATICS = {
    "sBoolean": ("boolean", True),
    "sByte": ("byte", -123),
    "sChar": ("char", "\u20ac"),
    "sShort": ("short", -12345),
    "sInt": ("int", -123456789),
    "sLong": ("long", -1234567890123456789),
    "sFloat": ("float", 3.25),
    "sDouble": ("double", -6.02214076e23),
    "sNull": ("object", 0),
    "NODES": ("int", NODES),
    "INT_ARRAYS": ("int", INT_ARRAYS),
    "INT_ARRAY_LEN": ("int", INT_ARRAY_LEN),
    "LEAVES": ("int", LEAVES),
}
OBJECT_STATICS = ("sString", "keep", "ints", "leaves")


def _f32(x):
    """x rounded to float32, as a float field holds it."""
    return struct.unpack(">f", struct.pack(">f", x))[0]


def jvm_quirks(dump, problems):
    """Split problems into (accepted JVM quirks with the reason, the rest);
    see the module doc for exactly what is accepted."""
    ok, rest = [], []
    dumped_names = {c.name for c in dump.classes.values() if c.dumped}
    several = len(dump.heap_dumps) > 1
    for p in problems:
        kind = getattr(p, "kind", None)
        # With several heap dumps, a dump's own problems start "heap dump #i (offset ...): ".
        m = re.match(r"heap dump #(\d+) \(offset [^)]*\)\): ", p)
        hd = dump.heap_dumps[int(m.group(1))] if m else dump.heap
        text = p[m.end():] if m else p
        if kind == "load_class_again":
            pairs = [(dump.load_class_by_serial[b].java_name or "", a, b) for _c, a, b in dump.repeated_loads]
            if all(n.startswith("[") or (several and a // JVM_SERIAL_RANGE != b // JVM_SERIAL_RANGE)
                   for n, a, b in pairs):
                ok.append((p, "JDK 17 writes LOAD CLASS twice for array classes%s" % (
                    "; each JVM dump of the file names its classes" if several else "")))
                continue
        elif kind == "dangling" and (m or not several) and len(hd.dangling_targets) <= 100000:
            refs = dump.referrers(hd.dangling_targets, limit=1000000, heap_dump=hd)
            srcs = {r.split(" [")[0] for v in refs.values() for r in v}
            n_refs = sum(len(v) for v in refs.values())
            if len(srcs) == 1 and n_refs == hd.dangling and next(iter(srcs)).startswith("[Ljava.lang.Object; "):
                arr = int(next(iter(srcs)).split()[1], 16)
                holders = dump.referrers([arr], limit=100, heap_dump=hd).get(arr, [])
                if holders and all(h == "root jni_global" for h in holders):
                    ok.append((p, "all %d come from the CDS archived-heap roots Object[] 0x%x "
                                  "(held only by a JNI global)" % (n_refs, arr)))
                    continue
        elif several and _repeated_by_another_dump(p):
            ok.append((p, "each of the file's JVM dumps defines it for itself"))
            continue
        elif kind == "root_dangling" and _renamed_sticky_class(dump, text, dumped_names):
            ok.append((p, "a retransformed boot class named again by an id without CLASS DUMP"))
            continue
        rest.append(p)
    return ok, rest


JVM_SERIAL_RANGE = 0x01000000     # each JVM dump's class serials (src/agent/heap_dump_jvm.c)


def _repeated_by_another_dump(problem):
    """See the module doc: what two JVM dumps in one file both define."""
    kind = getattr(problem, "kind", None)
    if kind == "utf8_twice":
        return problem.endswith(")")              # no ": 'a' then 'b'": the same text
    if kind in ("trace_twice", "frame_twice"):
        m = re.search(r"(?:serial |id 0x)([0-9a-f]+) defined twice", problem)
        return m is not None and int(m.group(1), 16 if kind == "frame_twice" else 10) < 0x10000
    if kind == "load_class_conflict":
        m = re.search(r"serials (\d+) and (\d+)", problem)
        return m is not None and all(int(x) >= 0x40000000 for x in m.groups()) and \
            int(m.group(1)) // JVM_SERIAL_RANGE != int(m.group(2)) // JVM_SERIAL_RANGE
    return False


def _renamed_sticky_class(dump, problem, dumped_names):
    """problem: 'GC root sticky_class -> 0x...: ...'; True if that id is a
    LOAD CLASS without CLASS DUMP whose name another id has a CLASS DUMP of
    (dumped_names: the names of the classes with a CLASS DUMP)."""
    m = re.match(r"GC root sticky_class -> 0x([0-9a-f]+):", problem)
    c = dump.classes.get(int(m.group(1), 16)) if m else None
    return c is not None and c.serial is not None and not c.dumped and c.name in dumped_names


def check_heap_shape(dump, Fail, jvm_quirks_ok=False):
    """Raise Fail with every mismatch (joined by '; ') unless the dump is
    exactly HeapShape's documented heap.  Returns a list of notes (accepted
    quirks, the int[10] count)."""
    errs = []
    notes = []
    I = dump.id_size

    def err(msg, *a):
        errs.append(msg % a if a else msg)

    def fail_now():
        raise Fail("heap shape: " + "; ".join(errs))

    if dump.heap is None:
        raise Fail("heap shape: the file has no heap dump")
    if I not in (4, 8):
        err("id size %d", I)

    # ---- classes: names, fields, superclasses, instance sizes
    def cls(name):
        try:
            c = dump.class_by_name(name)
        except (KeyError, ValueError) as e:
            err("%s", e)
            return None
        if not c.dumped:
            err("%s has no CLASS DUMP", name)
            return None
        return c

    shape = cls("HeapShape")
    node = cls("HeapShape$Node")
    leaf = cls("HeapShape$Leaf")
    base = cls("HeapShape$Base")
    obj = cls("java.lang.Object")
    if errs:
        fail_now()
    want_fields = {
        node: {("id", "int"), ("big", "long"), ("d", "double"), ("flag", "boolean"),
               ("next", "object"), ("name", "object"), ("extra", "object")},
        leaf: {("leafId", "int"), ("shadow", "long"), ("leafD", "double"), ("prev", "object")},
        base: {("baseId", "int"), ("baseName", "object"), ("shadow", "long")},
        shape: set(),
    }
    sizes = {node: 4 + 8 + 8 + 1 + 3 * I, leaf: 4 + 8 + 8 + I + 4 + I + 8, base: 4 + I + 8, shape: 0}
    for c, want in want_fields.items():
        got = collections.Counter(c.fields)
        if got != collections.Counter(want):
            err("%s instance fields %s, expected %s", c.java_name, sorted(got.elements()), sorted(want))
        if c.instance_size != sizes[c]:
            err("%s instance size %d, expected %d", c.java_name, c.instance_size, sizes[c])
    for c, sup in ((node, obj), (shape, obj), (base, obj), (leaf, base)):
        if c.super_id != sup.id:
            err("%s superclass 0x%x, expected %s 0x%x", c.java_name, c.super_id, sup.java_name, sup.id)
    if leaf.loader_id != node.loader_id or not node.loader_id:
        err("HeapShape$Node/Leaf loaders 0x%x/0x%x (expected the same application loader)",
            node.loader_id, leaf.loader_id)

    # ---- counts
    ic = dump.instance_counts
    for c, n in ((node, NODES), (leaf, LEAVES), (base, 0), (shape, 0)):
        if ic.get(c.id, 0) != n:
            err("%d instances of %s, expected %d", ic.get(c.id, 0), c.java_name, n)
    tc = dump.trace_counts
    if sum(v for (n, _t), v in tc.items() if n == "HeapShape$Node") != NODES:
        err("trace serial counts of HeapShape$Node do not add up to %d", NODES)

    # ---- statics of HeapShape
    st = {n: (t, v) for n, t, v in shape.statics}
    if len(st) != len(shape.statics):
        err("HeapShape has duplicate static field names: %s", [n for n, _t, _v in shape.statics])
    for name, (t, v) in STATICS.items():
        got = st.get(name)
        if got is None:
            err("HeapShape.%s missing from the CLASS DUMP", name)
        elif got != (t, v):
            err("HeapShape.%s = %r, expected %r", name, got, (t, v))
    for name in OBJECT_STATICS:
        got = st.get(name)
        if got is None or got[0] != "object" or not got[1]:
            err("HeapShape.%s = %r, expected a non-null object", name, got)
    extra = set(st) - set(STATICS) - set(OBJECT_STATICS)
    pseudo = {n for n in extra if n.startswith("<") and n.endswith(">") and st[n][0] == "object"}
    if jvm_quirks_ok and pseudo:
        # HotSpot adds pseudo static fields to CLASS DUMPs: '<resolved_references>'
        # (the constant pool's resolved references array) and '<init_lock>'.
        # Not Java fields (not valid identifiers); dangling checks still apply.
        notes.append("accepted JVM quirk: pseudo static fields %s" % sorted(pseudo))
        extra -= pseudo
    if extra:
        err("HeapShape has unexpected static fields %s", sorted(extra))
    if errs:
        fail_now()
    if dump.string_value(st["sString"][1]) != "heap-shape":
        err("HeapShape.sString is %r, expected 'heap-shape'", dump.string_value(st["sString"][1]))

    # ---- keep: Node[12345], keep[i] is Node #i, the next chain, names, extras
    roots = dump.fetch([st["keep"][1], st["ints"][1], st["leaves"][1]])
    keep = roots.get(st["keep"][1])
    if not isinstance(keep, H.ObjArray) or keep.class_name != "[LHeapShape$Node;" or len(keep.elements) != NODES:
        err("HeapShape.keep is %r, expected a HeapShape$Node[%d]", keep, NODES)
        fail_now()
    nodes = {n.id: n for n in dump.instances("HeapShape$Node")}
    if set(keep.elements) != set(nodes) or len(set(keep.elements)) != NODES:
        err("HeapShape.keep's elements are not exactly the %d HeapShape$Node instances", NODES)
        fail_now()
    bad = []
    for i, oid in enumerate(keep.elements):
        n = nodes[oid]
        want = {"id": i, "big": i * 1000000007, "d": i * 0.5, "flag": i % 3 == 0,
                "next": keep.elements[i + 1] if i + 1 < NODES else 0}
        got = {k: n[k] for k in want}
        if got != want:
            bad.append("Node #%d: %r, expected %r" % (i, got, want))
        if (n["name"] != 0) != (i % 2 == 0):
            bad.append("Node #%d: name 0x%x (expected %s)" % (i, n["name"], "a String" if i % 2 == 0 else "null"))
        if (n["extra"] != 0) != (i % 1000 == 0):
            bad.append("Node #%d: extra 0x%x (expected %s)"
                       % (i, n["extra"], "an Object[]" if i % 1000 == 0 else "null"))
    if bad:
        err("%d Node field mismatches, e.g. %s", len(bad), "; ".join(bad[:3]))
        fail_now()
    # The chain from Node #0 by next: 12345 nodes, ids 0..12344 in order.
    seen, cur = [], keep.elements[0]
    while cur and len(seen) <= NODES:
        seen.append(nodes[cur]["id"])
        cur = nodes[cur]["next"]
    if seen != list(range(NODES)):
        err("the next chain from Node #0 visits %d nodes, not ids 0..%d in order", len(seen), NODES - 1)
    for i in (0, 2, NODES - 1 if (NODES - 1) % 2 == 0 else NODES - 2):
        s = dump.string_value(nodes[keep.elements[i]]["name"])
        if s != "node-%d" % i:
            err("Node #%d name %r, expected %r", i, s, "node-%d" % i)
    extras = {i: nodes[keep.elements[i]]["extra"] for i in range(0, NODES, 1000)}
    got = dump.fetch(extras.values())
    for i, eid in extras.items():
        a = got.get(eid)
        want = [keep.elements[i], 0, node.id]
        if not isinstance(a, H.ObjArray) or a.class_name != "[Ljava.lang.Object;" or a.elements != want:
            err("Node #%d extra %s, expected Object[] %s", i,
                (a.class_name, a.elements) if isinstance(a, H.ObjArray) else a, want)

    # ---- ints: int[777][10] with ints[k][j] = k*10 + j
    ints = roots.get(st["ints"][1])
    if not isinstance(ints, H.ObjArray) or ints.class_name != "[[I" or len(ints.elements) != INT_ARRAYS \
            or len(set(ints.elements)) != INT_ARRAYS or 0 in ints.elements:
        err("HeapShape.ints is %r, expected int[%d][] of distinct arrays", ints, INT_ARRAYS)
    else:
        arrs = dump.fetch(ints.elements)
        for k, aid in enumerate(ints.elements):
            a = arrs.get(aid)
            want = [k * 10 + j for j in range(INT_ARRAY_LEN)]
            if not isinstance(a, H.PrimArray) or a.type != "int" or a.values != want:
                err("ints[%d] is %r, expected int[] %s", k, getattr(a, "values", a), want)
                break
    # The dump has every live int[10]: ours plus any the JDK itself holds, so
    # only ">=" can be asserted on the total; ours were checked one by one above.
    n10 = dump.array_lengths.get(("[I", INT_ARRAY_LEN), 0)
    if n10 < INT_ARRAYS:
        err("%d int[%d] in the dump, expected at least %d", n10, INT_ARRAY_LEN, INT_ARRAYS)
    notes.append("int[%d] arrays in the dump: %d (%d of HeapShape.ints + %d of the JDK's own)"
                 % (INT_ARRAY_LEN, n10, INT_ARRAYS, n10 - INT_ARRAYS))

    # ---- leaves: Base[3] of Leaf; superclass fields and the shadowed field
    leaves = roots.get(st["leaves"][1])
    if not isinstance(leaves, H.ObjArray) or leaves.class_name != "[LHeapShape$Base;" \
            or len(leaves.elements) != LEAVES:
        err("HeapShape.leaves is %r, expected HeapShape$Base[%d]", leaves, LEAVES)
    else:
        ls = dump.fetch(leaves.elements)
        for k, lid in enumerate(leaves.elements):
            l = ls.get(lid)
            if not isinstance(l, H.Instance) or l.class_name != "HeapShape$Leaf":
                err("leaves[%d] is %r, expected a HeapShape$Leaf", k, l)
                continue
            decl = [(c, n) for c, n, _t, _v in l.fields]
            want_decl = sorted([("HeapShape$Leaf", n) for n, _t in want_fields[leaf]]
                               + [("HeapShape$Base", n) for n, _t in want_fields[base]])
            # Dump order: the class's own fields first, then the superclass's.
            if sorted(decl) != want_decl or any(c != "HeapShape$Leaf" for c, _n in decl[:4]):
                err("Leaf #%d fields %s, expected Leaf's 4 then Base's 3", k, decl)
                continue
            want = [("HeapShape$Base", "baseId", 100 + k), ("HeapShape$Base", "shadow", 11 * k),
                    ("HeapShape$Leaf", "leafId", 200 + k), ("HeapShape$Leaf", "shadow", -(11 * k) - 1),
                    ("HeapShape$Leaf", "leafD", k + 0.25),
                    ("HeapShape$Leaf", "prev", leaves.elements[k - 1] if k else 0)]
            for c, n, v in want:
                if l.get(n, declaring=c) != v:
                    err("Leaf #%d %s.%s = %r, expected %r", k, c, n, l.get(n, declaring=c), v)
            s = dump.string_value(l.get("baseName", declaring="HeapShape$Base"))
            if s != "base-%d" % k:
                err("Leaf #%d baseName %r, expected %r", k, s, "base-%d" % k)

    # ---- integrity of the whole dump
    probs = dump.check()
    if jvm_quirks_ok:
        ok, probs = jvm_quirks(dump, probs)
        notes.extend("accepted JVM quirk: %s (%s)" % (r, p[:150]) for p, r in ok)
    for p in probs:
        err("check(): %s", p)
    if errs:
        fail_now()
    return notes


# ------------------------------------------------------------ jcmd GC.class_histogram

_HISTO_ROW = re.compile(r"^\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)(?:\s+\((.*)\))?\s*$")


def parse_histogram(text):
    """{class name: (instances, bytes)} from `jcmd <pid> GC.class_histogram`
    (or jmap -histo) output; rows of the same name (several loaders) are
    summed.  Names are as the JVM prints them: Class.getName() form with
    hidden classes as 'Foo$$Lambda/0x...' ('Foo$$Lambda$14/0x...' on JDK 17);
    the '(module@version)' suffix is dropped."""
    out = {}
    rows = 0
    for line in text.splitlines():
        m = _HISTO_ROW.match(line)
        if not m:
            continue
        rows += 1
        n = m.group(3)
        c, b = out.get(n, (0, 0))
        out[n] = (c + int(m.group(1)), b + int(m.group(2)))
    if not rows:
        raise ValueError("no histogram rows in the text")
    return out


def dump_counts(dump):
    """{class name: objects} from the dump, named as the histogram names them:
    instances per class, arrays per array class, and java.lang.Class counted
    as the histogram counts it - one per class mirror, i.e. every CLASS DUMP
    plus the INSTANCE DUMPs of java.lang.Class (the primitive-type mirrors,
    which the JVM writes as plain instances)."""
    out = collections.Counter()
    for cid, n in dump.instance_counts.items():
        out[dump.class_name(cid)] += n
    for name, (n, _e) in dump.array_counts.items():
        out[name] += n
    out["java.lang.Class"] += len(dump.heap.classes)
    return out


def _hist_name(n):
    # HotSpot's internal name of a hidden class has '+' where the external one has '/'.
    return n.replace("+", "/")


def compare_with_histogram(dump, histo_text, own_prefix="HeapShape"):
    """Compare instance/array counts of the dump with a jcmd GC.class_histogram
    of the same process.  Returns a dict:
      'own':  [(name, dump count, histogram count)] differing, for classes
              named own_prefix... and arrays of them (must be empty: nothing
              of the program changes between the two);
      'all':  [(name, dump count, histogram count)] differing, all classes
              (JDK classes churn a little between the dump and the histogram,
              which are two separate full GCs; attach allocates);
      'only_dump' / 'only_histogram': names found on one side only;
      'compared': number of names on either side."""
    h = {_hist_name(n): v[0] for n, v in parse_histogram(histo_text).items()}
    d = {_hist_name(n): v for n, v in dump_counts(dump).items()}

    def own(n):
        elem = n.lstrip("[")
        if elem != n and elem.startswith("L"):      # '[LFoo;' -> 'Foo;'
            elem = elem[1:]
        return elem.startswith(own_prefix)

    names = set(h) | set(d)
    diffs = sorted((n, d.get(n, 0), h.get(n, 0)) for n in names if d.get(n, 0) != h.get(n, 0))
    return {
        "own": [x for x in diffs if own(x[0])],
        "all": diffs,
        "only_dump": sorted(n for n in d if n not in h),
        "only_histogram": sorted(n for n in h if n not in d),
        "compared": len(names),
        # Distinct ids referenced but not dumped (see jvm_quirks): with CDS the
        # histogram's java.lang.Class count is higher by exactly this many.
        "dangling_targets": len(dump.heap.dangling_targets),
    }


if __name__ == "__main__":
    # python3 tests/heap_dump_check.py DUMP [HISTOGRAM.txt] [--jvm-quirks]
    class Fail(Exception):
        pass

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quirks = "--jvm-quirks" in sys.argv
    d = H.read(args[0])
    rc = 0
    try:
        for n in check_heap_shape(d, Fail, jvm_quirks_ok=quirks):
            print("note:", n)
        print("heap shape OK")
    except Fail as e:
        print("FAIL:", e)
        rc = 1
    if len(args) > 1:
        r = compare_with_histogram(d, open(args[1]).read())
        print("histogram: %d names compared, %d differ (own classes: %d)"
              % (r["compared"], len(r["all"]), len(r["own"])))
        for n, a, b in r["all"]:
            print("  %-60s dump %7d  histogram %7d  %+d" % (n, a, b, a - b))
        if r["own"]:
            rc = 1
    sys.exit(rc)
