#!/usr/bin/env python3
"""Strict, independent reader for HPROF binary files ("JAVA PROFILE 1.0.1" and
"JAVA PROFILE 1.0.2"): heap dumps and the other binary hprof records.

Written from the published format description (the comment at the top of
HotSpot's services/heapDumper.cpp, itself copied from the JDK 6 hprof agent's
hprof_io.c / manual), not from this project's writer, so that tests can use it
to check what the agent writes.  Usage::

    import hprof_reader
    d = hprof_reader.read("dump.hprof")     # raises ParseError on bad structure
    d.id_size, d.format, d.timestamp_ms
    d.classes[cid].java_name                 # 'java.lang.String', '[I', ...
    d.instance_counts[cid]                   # instances of exactly that class
    d.array_counts['[I']                     # (arrays, total elements)
    d.check()                                # list of integrity problems
    d.instances('HeapShape$Node')            # decoded field values (re-reads)
    d.fetch([id, ...])                       # decoded objects by id (re-reads)

    python3 tests/hprof_reader.py FILE [--summary] [--histogram] [--check]
    python3 tests/hprof_reader.py --selftest     # synthetic files, every error class

CLI exit codes: 0 fine, 1 --check found problems, 2 ParseError (printed).

Two levels of strictness:

* Structure errors raise ParseError naming the file offset: bad header, id
  size other than 4 or 8, a record or sub-record running past the end of the
  file or past the end of the HEAP DUMP / HEAP DUMP SEGMENT that contains it,
  a fixed-size record whose length is not exactly its content, unknown tags
  (top-level or sub-record), unknown type codes, segments in a 1.0.1 file,
  HEAP DUMP END without segments, segments not closed by HEAP DUMP END.
  The Android extensions ("JAVA PROFILE 1.0.3": HEAP DUMP INFO 0xFE, roots
  0x89-0x8E, 0x90, PRIMITIVE ARRAY NODATA 0xC3) are refused with an error
  naming them: they are not part of 1.0.1/1.0.2 and the agent must not write
  them.
* Integrity problems (references, sizes, serial numbers, duplicates) are
  collected and returned by Dump.check() as strings (Problem: str with a
  .kind, so a caller can accept one known kind knowingly); see check().

Memory: the file is mmap'ed and pages already parsed are released (madvise),
so the resident size stays near the size of the per-class summaries plus an
object-id bitmap (1 bit per possible id value in 512K-id chunks that hold at
least one object: about 1/8 of the live heap range for address-like ids,
tiny for small sequential ids) plus 8 bytes per reference that points
forward in the file and is not resolved yet (compacted as the targets turn
up, the rest checked at the end).  No object's bytes are kept; values are
decoded on demand by re-reading (instances(), fetch(), referrers()).
Measured on a 1 GB jcmd dump (13.2 M objects): ~20-30 s for the pass, ~410 MB
peak RSS (92 MB of it the bitmap of a 1 GB address range).
"""

import array
import collections
import mmap
import os
import struct
import sys

FORMATS = ("JAVA PROFILE 1.0.1", "JAVA PROFILE 1.0.2")

# Top-level record tags.
UTF8, LOAD_CLASS, UNLOAD_CLASS, FRAME, TRACE = 0x01, 0x02, 0x03, 0x04, 0x05
ALLOC_SITES, HEAP_SUMMARY, START_THREAD, END_THREAD = 0x06, 0x07, 0x0A, 0x0B
HEAP_DUMP, CPU_SAMPLES, CONTROL_SETTINGS = 0x0C, 0x0D, 0x0E
HEAP_DUMP_SEGMENT, HEAP_DUMP_END = 0x1C, 0x2C
TOP_TAGS = {
    UTF8: "UTF8", LOAD_CLASS: "LOAD CLASS", UNLOAD_CLASS: "UNLOAD CLASS",
    FRAME: "STACK FRAME", TRACE: "STACK TRACE", ALLOC_SITES: "ALLOC SITES",
    HEAP_SUMMARY: "HEAP SUMMARY", START_THREAD: "START THREAD",
    END_THREAD: "END THREAD", HEAP_DUMP: "HEAP DUMP", CPU_SAMPLES: "CPU SAMPLES",
    CONTROL_SETTINGS: "CONTROL SETTINGS", HEAP_DUMP_SEGMENT: "HEAP DUMP SEGMENT",
    HEAP_DUMP_END: "HEAP DUMP END",
}

# Heap dump sub-record tags.
ROOT_UNKNOWN, ROOT_JNI_GLOBAL, ROOT_JNI_LOCAL, ROOT_JAVA_FRAME = 0xFF, 0x01, 0x02, 0x03
ROOT_NATIVE_STACK, ROOT_STICKY_CLASS, ROOT_THREAD_BLOCK = 0x04, 0x05, 0x06
ROOT_MONITOR_USED, ROOT_THREAD_OBJ = 0x07, 0x08
CLASS_DUMP, INSTANCE_DUMP, OBJ_ARRAY_DUMP, PRIM_ARRAY_DUMP = 0x20, 0x21, 0x22, 0x23
SUB_TAGS = {
    ROOT_UNKNOWN: "ROOT UNKNOWN", ROOT_JNI_GLOBAL: "ROOT JNI GLOBAL",
    ROOT_JNI_LOCAL: "ROOT JNI LOCAL", ROOT_JAVA_FRAME: "ROOT JAVA FRAME",
    ROOT_NATIVE_STACK: "ROOT NATIVE STACK", ROOT_STICKY_CLASS: "ROOT STICKY CLASS",
    ROOT_THREAD_BLOCK: "ROOT THREAD BLOCK", ROOT_MONITOR_USED: "ROOT MONITOR USED",
    ROOT_THREAD_OBJ: "ROOT THREAD OBJECT", CLASS_DUMP: "CLASS DUMP",
    INSTANCE_DUMP: "INSTANCE DUMP", OBJ_ARRAY_DUMP: "OBJ ARRAY DUMP",
    PRIM_ARRAY_DUMP: "PRIM ARRAY DUMP",
}
# Root kinds as they appear in Dump.roots, and what their "extra" tuple holds.
ROOT_KINDS = {
    ROOT_UNKNOWN: "unknown",            # ()
    ROOT_JNI_GLOBAL: "jni_global",      # (JNI global ref id,)
    ROOT_JNI_LOCAL: "jni_local",        # (thread serial, frame # or -1)
    ROOT_JAVA_FRAME: "java_frame",      # (thread serial, frame # or -1)
    ROOT_NATIVE_STACK: "native_stack",  # (thread serial,)
    ROOT_STICKY_CLASS: "sticky_class",  # ()
    ROOT_THREAD_BLOCK: "thread_block",  # (thread serial,)
    ROOT_MONITOR_USED: "monitor_used",  # ()
    ROOT_THREAD_OBJ: "thread_object",   # (thread serial, stack trace serial)
}
# Android's additions (ART hprof.cc, "JAVA PROFILE 1.0.3"), refused by name.
ANDROID_SUB_TAGS = {
    0xFE: "HEAP DUMP INFO", 0x89: "ROOT INTERNED STRING", 0x8A: "ROOT FINALIZING",
    0x8B: "ROOT DEBUGGER", 0x8C: "ROOT REFERENCE CLEANUP", 0x8D: "ROOT VM INTERNAL",
    0x8E: "ROOT JNI MONITOR", 0x90: "UNREACHABLE", 0xC3: "PRIMITIVE ARRAY NODATA DUMP",
}

# Basic types (field, static, constant pool and primitive array element types).
# 1 (HPROF_ARRAY_OBJECT) is defined in hprof's tag list but the format never
# uses it for a value: fields of array type are "2: object".  Refused.
OBJECT = 2
TYPE_NAMES = {2: "object", 4: "boolean", 5: "char", 6: "float", 7: "double",
              8: "byte", 9: "short", 10: "int", 11: "long"}
PRIM_SIZE = {4: 1, 5: 2, 6: 4, 7: 8, 8: 1, 9: 2, 10: 4, 11: 8}
PRIM_FMT = {4: "B", 5: "H", 6: "f", 7: "d", 8: "b", 9: "h", 10: "i", 11: "q"}
# Element size by type code, 0 = not a primitive type (fast table lookup).
_ESIZE = (0, 0, 0, 0, 1, 2, 4, 8, 1, 2, 4, 8)
PRIM_ARRAY_NAME = {4: "[Z", 5: "[C", 6: "[F", 7: "[D", 8: "[B", 9: "[S", 10: "[I", 11: "[J"}
_DESC_TO_PRIM = {"Z": "boolean", "C": "char", "F": "float", "D": "double", "B": "byte",
                 "S": "short", "I": "int", "J": "long"}
_PRIM_TO_DESC = {v: k for k, v in _DESC_TO_PRIM.items()}

# Object-id bitmap geometry: chunk = ids sharing (id >> _CHUNK_SHIFT).
_CHUNK_SHIFT = 19                       # 512K id values per chunk
_CHUNK_BYTES = 1 << (_CHUNK_SHIFT - 3)  # 64 KB
_CHUNK_MASK = _CHUNK_BYTES - 1
_RELEASE_STEP = 64 << 20                # madvise parsed pages every 64 MB
_DANGLING_KEEP = 100000                 # distinct dangling ids kept per heap dump
_SLICE_BYTES = 8 << 20                  # object array elements are checked 8 MB at a time

_LITTLE = sys.byteorder == "little"


class ParseError(Exception):
    """The file does not follow the format; the message names the offset."""


class Problem(str):
    """An integrity problem: a plain string with a .kind (a short key such as
    'dangling', 'instance_length', 'load_class_again') so that a caller can
    knowingly accept one kind, e.g. a JVM's known quirk, and no other."""

    def __new__(cls, kind, text):
        p = str.__new__(cls, text)
        p.kind = kind
        return p


def _at(off):
    return "offset %d (0x%x)" % (off, off)


def decode_mutf8(b):
    """Java's "modified UTF-8" (what the JVM's symbols are): NUL as C0 80 and
    supplementary characters as two 3-byte surrogates.  Returns None if the
    bytes are not even that."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        s = b.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    try:  # join surrogate pairs into real characters
        return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        return s  # a lone surrogate: keep it as is


def java_name(raw):
    """Class name as Class.getName() gives it (and jcmd/jmap print it) from the
    LOAD CLASS name, which may be in JVM-internal form ('java/lang/String',
    '[Ljava/lang/String;', as HotSpot writes) or in the JDK 6 hprof agent's
    source form ('java.lang.String', 'java.lang.String[]', 'int[]')."""
    if raw is None:
        return None
    if raw.endswith("[]"):
        base, dims = raw, 0
        while base.endswith("[]"):
            base, dims = base[:-2], dims + 1
        d = _PRIM_TO_DESC.get(base)
        return "[" * dims + (d if d else "L" + base.replace("/", ".") + ";")
    return raw.replace("/", ".")


def pretty_name(jname):
    """'[[I' -> 'int[][]', '[Ljava.lang.String;' -> 'java.lang.String[]'."""
    if jname is None or not jname.startswith("["):
        return jname
    dims = len(jname) - len(jname.lstrip("["))
    elem = jname[dims:]
    if elem.startswith("L") and elem.endswith(";"):
        base = elem[1:-1]
    else:
        base = _DESC_TO_PRIM.get(elem, elem)
    return base + "[]" * dims


class ClassInfo:
    """A class: its LOAD CLASS record and/or its CLASS DUMP (from the last heap
    dump).  Types are names ('object', 'int', ...)."""

    __slots__ = ("id", "serial", "name", "java_name", "load_trace", "name_id",
                 "unloaded", "dumped", "trace", "super_id", "loader_id",
                 "signers_id", "domain_id", "reserved", "instance_size",
                 "constant_pool", "statics", "fields", "offset", "_field_codes")

    def __init__(self, cid):
        self.id = cid
        self.serial = None          # LOAD CLASS serial (None: no LOAD CLASS)
        self.name = None            # as LOAD CLASS gives it ('java/lang/String')
        self.java_name = None       # Class.getName() form ('java.lang.String')
        self.load_trace = None      # LOAD CLASS stack trace serial
        self.name_id = None
        self.unloaded = False
        self.dumped = False         # has a CLASS DUMP
        self.trace = None           # CLASS DUMP stack trace serial
        self.super_id = self.loader_id = self.signers_id = self.domain_id = None
        self.reserved = None        # the two reserved ids
        self.instance_size = None   # CLASS DUMP "instance size (in bytes)"
        self.constant_pool = []     # [(index, type, value)]
        self.statics = []           # [(name, type, value)]; object values are ids
        self.fields = []            # [(name, type)] declared in this class only
        self.offset = None          # file offset of the CLASS DUMP
        self._field_codes = []      # [(name id, type code)]

    @property
    def pretty_name(self):
        return pretty_name(self.java_name)

    def static(self, name):
        """Value of the static field `name` (KeyError if none)."""
        for n, _t, v in self.statics:
            if n == name:
                return v
        raise KeyError("%s has no static field %r" % (self.java_name, name))

    def __repr__(self):
        return "<ClassInfo %s id=0x%x serial=%s>" % (self.java_name, self.id, self.serial)


class Instance:
    """A decoded INSTANCE DUMP.  fields: [(declaring class java name, field
    name, type, value)] in dump order (the class, then its superclasses);
    inst['x'] is the first (most derived) field named x."""

    __slots__ = ("id", "trace", "class_id", "class_name", "fields")

    def __init__(self, oid, trace, class_id, class_name, fields):
        self.id, self.trace, self.class_id = oid, trace, class_id
        self.class_name, self.fields = class_name, fields

    def __getitem__(self, name):
        for _c, n, _t, v in self.fields:
            if n == name:
                return v
        raise KeyError("%s has no field %r" % (self.class_name, name))

    def get(self, name, declaring=None):
        """Field value by name, optionally of the given declaring class."""
        for c, n, _t, v in self.fields:
            if n == name and (declaring is None or c == declaring):
                return v
        raise KeyError("%s has no field %r%s" % (self.class_name, name,
                                                  "" if declaring is None else " in " + declaring))

    def __repr__(self):
        return "<Instance %s 0x%x>" % (self.class_name, self.id)


class ObjArray:
    __slots__ = ("id", "trace", "class_id", "class_name", "elements")

    def __init__(self, oid, trace, class_id, class_name, elements):
        self.id, self.trace, self.class_id = oid, trace, class_id
        self.class_name, self.elements = class_name, elements


class PrimArray:
    __slots__ = ("id", "trace", "type", "class_name", "values")

    def __init__(self, oid, trace, etype, values):
        self.id, self.trace, self.type = oid, trace, TYPE_NAMES[etype]
        self.class_name, self.values = PRIM_ARRAY_NAME[etype], values


Frame = collections.namedtuple("Frame", "id method signature source class_serial line")
Thread = collections.namedtuple("Thread", "serial object_id trace name group parent_group ended")


class HeapDump:
    """One heap dump: a HEAP DUMP record, or HEAP DUMP SEGMENTs up to HEAP DUMP END."""

    def __init__(self, index, offset, segmented):
        self.index = index
        self.offset = offset            # file offset of its first record
        self.segmented = segmented
        self.regions = []               # [(start, end)] of sub-record bytes
        self.classes = {}               # class id -> ClassInfo (from CLASS DUMP)
        self.roots = []                 # [(kind, object id, extra tuple)]
        self.instances = 0
        self.obj_arrays = 0
        self.prim_arrays = 0
        # Working state of the scan (mostly dropped at the end).
        self._bitmap = {}               # id >> _CHUNK_SHIFT -> bytearray bitmap
        self._dups = array.array("Q")
        self._pending = array.array("Q")  # references to ids not seen yet
        self._compact_at = 1 << 20      # compact _pending when longer than this
        self._deferred = array.array("Q")  # offsets of instances whose class was unknown
        # class id -> [layout size or None, refs unpacker or None, count, bytes,
        #              {trace: count}, [length mismatches, first offset, first length]]
        self._cstate = {}
        self._oarr = {}                 # class id -> [count, elements, {trace: n}, {length: n}]
        self._plen = {}                 # (type << 32 | length) -> count
        self._ptrace = {}               # (type << 32 | trace) -> count
        self.problems = []
        self.dangling = 0               # references to ids not in this dump
        self.dangling_examples = []     # the most referenced few
        self.dangling_targets = set()   # all of them (up to _DANGLING_KEEP)
        self._dangling_text = None
        self.duplicates = 0
        self.duplicate_examples = []

    @property
    def objects(self):
        return self.instances + self.obj_arrays + self.prim_arrays


class Dump:
    """The contents of an HPROF binary file (see module doc).  Heap-dump
    attributes (classes' CLASS DUMP data, roots, counts) describe the LAST heap
    dump in the file; all of them are in heap_dumps."""

    def __init__(self, path):
        self.path = path
        self.format = None
        self.id_size = None
        self.timestamp_ms = None
        self.file_size = 0
        self.record_counts = collections.Counter()   # top-level tag name -> n
        self.strings = {}                   # UTF8 id -> str
        self.classes = {}                   # class object id -> ClassInfo
        self.load_class_by_serial = {}      # LOAD CLASS serial -> ClassInfo
        self.frames = {}                    # frame id -> Frame
        self.traces = {}                    # trace serial -> (thread serial, [frame ids])
        self.threads = {}                   # START THREAD serial -> Thread
        self.alloc_sites = []               # dicts, one per ALLOC SITES record
        self.heap_summaries = []            # dicts
        self.cpu_samples = []               # (total, [(count, trace serial)])
        self.control_settings = []          # (flags, stack depth)
        self.heap_dumps = []                # [HeapDump]
        self.segment_sizes = []             # body lengths of HEAP DUMP SEGMENTs
        self.problems = []                  # filled by check()
        self._parse_problems = []
        self._loads = {}                    # class id -> ClassInfo from LOAD CLASS
        self.repeated_loads = []            # (class id, first serial, new serial) of same-name reloads
        self._used_traces = collections.defaultdict(set)   # serial -> {"what", ...}
        self._used_names = collections.defaultdict(set)    # UTF8 id -> {"what", ...}
        self._mm = None
        self._released = 0
        self._next_release = _RELEASE_STEP

    # ------------------------------------------------------------ accessors

    @property
    def heap(self):
        """The last heap dump (None if the file has none)."""
        return self.heap_dumps[-1] if self.heap_dumps else None

    @property
    def roots(self):
        return self.heap.roots if self.heap else []

    @property
    def objects(self):
        """INSTANCE + OBJ ARRAY + PRIM ARRAY dumps (not CLASS DUMPs) of the last heap dump."""
        return self.heap.objects if self.heap else 0

    @property
    def instance_counts(self):
        """class id -> number of INSTANCE DUMPs of exactly that class."""
        if not self.heap:
            return {}
        return {cid: st[2] for cid, st in self.heap._cstate.items() if st[2]}

    @property
    def instance_bytes(self):
        """class id -> sum of the instances' field-byte lengths (as in the dump)."""
        if not self.heap:
            return {}
        return {cid: st[3] for cid, st in self.heap._cstate.items() if st[2]}

    @property
    def array_counts(self):
        """array class name (Class.getName() form: '[I', '[Ljava.lang.Object;')
        -> (number of arrays, total elements)."""
        out = {}
        if not self.heap:
            return out
        for cid, st in self.heap._oarr.items():
            n = self.class_name(cid)
            c, e = out.get(n, (0, 0))
            out[n] = (c + st[0], e + st[1])
        for k, cnt in self.heap._plen.items():
            n = PRIM_ARRAY_NAME[k >> 32]
            c, e = out.get(n, (0, 0))
            out[n] = (c + cnt, e + cnt * (k & 0xFFFFFFFF))
        return out

    @property
    def array_lengths(self):
        """Counter: (array class name, length) -> number of arrays."""
        out = collections.Counter()
        if not self.heap:
            return out
        for cid, st in self.heap._oarr.items():
            n = self.class_name(cid)
            for ln, cnt in st[3].items():
                out[(n, ln)] += cnt
        for k, cnt in self.heap._plen.items():
            out[(PRIM_ARRAY_NAME[k >> 32], k & 0xFFFFFFFF)] += cnt
        return out

    @property
    def trace_counts(self):
        """Counter: (class name, stack trace serial) -> number of instances and
        arrays of that class dumped with that trace serial."""
        out = collections.Counter()
        if not self.heap:
            return out
        for cid, st in self.heap._cstate.items():
            n = self.class_name(cid)
            for ts, cnt in st[4].items():
                out[(n, ts)] += cnt
        for cid, st in self.heap._oarr.items():
            n = self.class_name(cid)
            for ts, cnt in st[2].items():
                out[(n, ts)] += cnt
        for k, cnt in self.heap._ptrace.items():
            out[(PRIM_ARRAY_NAME[k >> 32], k & 0xFFFFFFFF)] += cnt
        return out

    def trace_methods(self, serial):
        """Method names (Class.method) of a trace's frames, top first; [] for
        a serial with no STACK TRACE record."""
        t = self.traces.get(serial)
        if t is None:
            return []
        out = []
        for fid in t[1]:
            f = self.frames.get(fid)
            if f is not None:
                cls = self.load_class_by_serial.get(f.class_serial)
                out.append("%s.%s" % (cls.java_name if cls is not None else "?", f.method))
        return out

    def class_name(self, cid):
        ci = self.classes.get(cid)
        if ci is not None and ci.java_name is not None:
            return ci.java_name
        return "<class 0x%x>" % cid

    def class_by_name(self, name):
        """The ClassInfo named `name` (Java, internal or source form).  KeyError
        if none; ValueError if several classes have that name (several loaders)."""
        jn = java_name(name)
        found = [c for c in self.classes.values() if c.java_name == jn]
        if not found:
            raise KeyError("no class named %r" % name)
        if len(found) > 1:
            raise ValueError("%d classes named %r" % (len(found), name))
        return found[0]

    def root_counts(self):
        return collections.Counter(k for k, _o, _e in self.roots)

    def histogram(self):
        """Rows (name, count, bytes) sorted like jmap -histo (bytes, descending).
        bytes: for instances the field bytes the dump gives them (the INSTANCE
        DUMP's "number of bytes that follow": fields of the class and its
        superclasses, object fields at id size); for arrays the element bytes
        (length x element size, id size for object arrays).  No object headers
        or alignment: the format does not say what the JVM's layout was."""
        rows = collections.defaultdict(lambda: [0, 0])
        for cid, c in self.instance_counts.items():
            r = rows[self.class_name(cid)]
            r[0] += c
            r[1] += self.instance_bytes[cid]
        if self.heap:
            for cid, st in self.heap._oarr.items():
                r = rows[self.class_name(cid)]
                r[0] += st[0]
                r[1] += st[1] * self.id_size
            for k, cnt in self.heap._plen.items():
                r = rows[PRIM_ARRAY_NAME[k >> 32]]
                r[0] += cnt
                r[1] += cnt * (k & 0xFFFFFFFF) * PRIM_SIZE[k >> 32]
        return sorted(((n, c, b) for n, (c, b) in rows.items()), key=lambda r: (-r[2], -r[1], r[0]))

    # ------------------------------------------------------------ parsing

    def _open(self):
        self.file_size = os.path.getsize(self.path)
        if self.file_size == 0:
            raise ParseError("%s: empty file" % self.path)
        with open(self.path, "rb") as f:
            self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def close(self):
        if self._mm is not None:
            self._mm.close()
            self._mm = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _drop_pages(self, lo, hi):
        """Drop the mapped pages of [lo, hi) from our resident set (the page
        cache keeps them); otherwise a 1 GB dump would show as 1 GB of RSS."""
        lo &= ~(mmap.PAGESIZE - 1)
        hi &= ~(mmap.PAGESIZE - 1)
        if hi > lo and hasattr(self._mm, "madvise"):
            try:
                self._mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
            except (OSError, ValueError):
                pass

    def _release(self, upto):
        """First pass: drop what has been parsed so far."""
        self._drop_pages(self._released, upto)
        self._released = upto & ~(mmap.PAGESIZE - 1)
        self._next_release = upto + _RELEASE_STEP

    def _parse(self):
        mm, size = self._mm, self.file_size
        nul = mm.find(b"\0", 0, 64)
        if nul < 0:
            raise ParseError("no NUL-terminated format string at offset 0")
        fmt = mm[:nul].decode("latin-1")
        if fmt not in FORMATS:
            raise ParseError("unknown format %r at offset 0 (expected %s)" % (fmt, " or ".join(FORMATS)))
        self.format = fmt
        if nul + 13 > size:
            raise ParseError("file truncated in the header (size %d)" % size)
        ids, hi, lo = struct.unpack_from(">III", mm, nul + 1)
        if ids not in (4, 8):
            raise ParseError("identifier size %d at %s (must be 4 or 8)" % (ids, _at(nul + 1)))
        self.id_size = I = ids
        self.timestamp_ms = (hi << 32) | lo
        X = "Q" if I == 8 else "I"
        self._X = X
        s_id = struct.Struct(">" + X)
        self._s_id = s_id
        load_s = struct.Struct(">I" + X + "I" + X)
        frame_s = struct.Struct(">4" + X + "Ii")
        thread_s = struct.Struct(">I" + X + "I" + X + X + X)
        hdr_s = struct.Struct(">BII")
        segments = None          # the HeapDump being built from segments
        pos = nul + 13
        while pos < size:
            if pos + 9 > size:
                raise ParseError("file truncated: record header at %s needs 9 bytes, %d left"
                                 % (_at(pos), size - pos))
            tag, _us, length = hdr_s.unpack_from(mm, pos)
            body = pos + 9
            end = body + length
            name = TOP_TAGS.get(tag)
            if name is None:
                raise ParseError("unknown top-level record tag 0x%02x at %s" % (tag, _at(pos)))
            if end > size:
                raise ParseError("file truncated: %s record at %s has length %d but only %d bytes follow"
                                 % (name, _at(pos), length, size - body))
            self.record_counts[name] += 1

            def exact(n, what=name):
                if length != n:
                    raise ParseError("%s record at %s has length %d, its content is %d bytes"
                                     % (what, _at(pos), length, n))

            if tag == UTF8:
                if length < I:
                    raise ParseError("UTF8 record at %s has length %d < id size %d" % (_at(pos), length, I))
                sid = s_id.unpack_from(mm, body)[0]
                raw = mm[body + I:end]
                s = decode_mutf8(raw)
                if s is None:
                    self._pp("utf8", "UTF8 0x%x at %s is not (modified) UTF-8: %r"
                                                % (sid, _at(pos), raw[:60]))
                    s = raw.decode("utf-8", "replace")
                if sid in self.strings:
                    self._pp("utf8_twice", "UTF8 id 0x%x defined twice (again at %s)%s"
                                                % (sid, _at(pos), "" if self.strings[sid] == s
                                                   else ": %r then %r" % (self.strings[sid], s)))
                self.strings[sid] = s
            elif tag == LOAD_CLASS:
                exact(load_s.size)
                serial, cid, ts, nid = load_s.unpack_from(mm, body)
                if serial in self.load_class_by_serial:
                    self._pp("serial_twice", "LOAD CLASS serial %d used twice (again at %s)" % (serial, _at(pos)))
                if serial == 0:
                    self._pp("serial_zero", "LOAD CLASS at %s has serial 0 (must be > 0)" % _at(pos))
                old = self._loads.get(cid)
                if old is not None and not old.unloaded:
                    # HotSpot before JDK 21 or so writes an array class's LOAD CLASS
                    # twice (same id, same name): its own kind so it can be accepted.
                    if old.name_id == nid:
                        self.repeated_loads.append((cid, old.serial, serial))
                    else:
                        self._pp("load_class_conflict", "class 0x%x loaded twice with different names "
                                 "(serials %s and %d)" % (cid, old.serial, serial))
                ci = ClassInfo(cid)
                ci.serial, ci.load_trace, ci.name_id = serial, ts, nid
                self._loads[cid] = ci
                self.load_class_by_serial[serial] = ci
                self._used_traces[ts].add("LOAD CLASS")
                self._used_names[nid].add("LOAD CLASS name")
            elif tag == UNLOAD_CLASS:
                exact(4)
                serial = struct.unpack_from(">I", mm, body)[0]
                ci = self.load_class_by_serial.get(serial)
                if ci is None:
                    self._pp("unload", "UNLOAD CLASS at %s: no LOAD CLASS serial %d" % (_at(pos), serial))
                else:
                    ci.unloaded = True
            elif tag == FRAME:
                exact(frame_s.size)
                fid, mid, sig, src, cser, line = frame_s.unpack_from(mm, body)
                if fid in self.frames:
                    self._pp("frame_twice", "STACK FRAME id 0x%x defined twice (again at %s)" % (fid, _at(pos)))
                self.frames[fid] = Frame(fid, mid, sig, src, cser, line)
                self._used_names[mid].add("STACK FRAME method name")
                self._used_names[sig].add("STACK FRAME method signature")
                if src:
                    self._used_names[src].add("STACK FRAME source file")
            elif tag == TRACE:
                if length < 12:
                    raise ParseError("STACK TRACE record at %s has length %d < 12" % (_at(pos), length))
                serial, tser, n = struct.unpack_from(">III", mm, body)
                exact(12 + n * I)
                fids = list(struct.unpack_from(">%d%s" % (n, X), mm, body + 12))
                if serial in self.traces:
                    self._pp("trace_twice", "STACK TRACE serial %d defined twice (again at %s)" % (serial, _at(pos)))
                self.traces[serial] = (tser, fids)
            elif tag == ALLOC_SITES:
                if length < 34:
                    raise ParseError("ALLOC SITES record at %s has length %d < 34" % (_at(pos), length))
                flags, cutoff, lb, li, ab, ai, n = struct.unpack_from(">HIIIQQI", mm, body)
                exact(34 + 25 * n)
                sites = []
                for k in range(n):
                    site = struct.unpack_from(">BIIIIII", mm, body + 34 + 25 * k)
                    if site[0] not in (0, 2) and site[0] not in PRIM_SIZE:
                        raise ParseError("ALLOC SITES record at %s: site %d has is_array %d"
                                         % (_at(pos), k, site[0]))
                    sites.append(site)
                    self._used_traces[site[2]].add("ALLOC SITES")
                self.alloc_sites.append(dict(offset=pos, flags=flags, cutoff_raw=cutoff,
                                             cutoff=struct.unpack(">f", struct.pack(">I", cutoff))[0],
                                             live_bytes=lb, live_instances=li, alloc_bytes=ab,
                                             alloc_instances=ai, sites=sites))
            elif tag == HEAP_SUMMARY:
                exact(24)
                lb, li, ab, ai = struct.unpack_from(">IIQQ", mm, body)
                self.heap_summaries.append(dict(live_bytes=lb, live_instances=li,
                                                alloc_bytes=ab, alloc_instances=ai))
            elif tag == START_THREAD:
                exact(thread_s.size)
                tser, oid, ts, nm, grp, par = thread_s.unpack_from(mm, body)
                if tser in self.threads:
                    self._pp("thread_twice", "START THREAD serial %d used twice (again at %s)" % (tser, _at(pos)))
                self.threads[tser] = Thread(tser, oid, ts, nm, grp, par, False)
                self._used_traces[ts].add("START THREAD")
                for v, what in ((nm, "thread name"), (grp, "thread group name"), (par, "thread parent group name")):
                    if v:  # 0: no name (an unnamed group, no parent group)
                        self._used_names[v].add("START THREAD " + what)
            elif tag == END_THREAD:
                exact(4)
                tser = struct.unpack_from(">I", mm, body)[0]
                t = self.threads.get(tser)
                if t is None:
                    self._pp("end_thread", "END THREAD at %s: no START THREAD serial %d" % (_at(pos), tser))
                elif t.ended:
                    self._pp("end_thread", "END THREAD at %s: thread %d already ended" % (_at(pos), tser))
                else:
                    self.threads[tser] = t._replace(ended=True)
            elif tag == CPU_SAMPLES:
                if length < 8:
                    raise ParseError("CPU SAMPLES record at %s has length %d < 8" % (_at(pos), length))
                total, n = struct.unpack_from(">II", mm, body)
                exact(8 + 8 * n)
                v = struct.unpack_from(">%dI" % (2 * n), mm, body + 8)
                rows = list(zip(v[0::2], v[1::2]))
                for _c, ts in rows:
                    self._used_traces[ts].add("CPU SAMPLES")
                if sum(c for c, _t in rows) > total:
                    self._pp("cpu_samples", "CPU SAMPLES at %s: the traces' samples add up to %d > total %d"
                                                % (_at(pos), sum(c for c, _t in rows), total))
                self.cpu_samples.append((total, rows))
            elif tag == CONTROL_SETTINGS:
                exact(6)
                self.control_settings.append(struct.unpack_from(">IH", mm, body))
            elif tag == HEAP_DUMP:
                if segments is not None:
                    raise ParseError("HEAP DUMP record at %s inside a sequence of HEAP DUMP SEGMENTs "
                                     "(no HEAP DUMP END before it)" % _at(pos))
                hd = HeapDump(len(self.heap_dumps), pos, False)
                self.heap_dumps.append(hd)
                self._scan(hd, body, end, "HEAP DUMP record at " + _at(pos))
                self._finish(hd)
            elif tag == HEAP_DUMP_SEGMENT:
                if fmt != "JAVA PROFILE 1.0.2":
                    raise ParseError("HEAP DUMP SEGMENT at %s in a %s file (segments are 1.0.2 only)"
                                     % (_at(pos), fmt))
                if segments is None:
                    segments = HeapDump(len(self.heap_dumps), pos, True)
                    self.heap_dumps.append(segments)
                self.segment_sizes.append(length)
                self._scan(segments, body, end, "HEAP DUMP SEGMENT at " + _at(pos))
            elif tag == HEAP_DUMP_END:
                if fmt != "JAVA PROFILE 1.0.2":
                    raise ParseError("HEAP DUMP END at %s in a %s file (1.0.2 only)" % (_at(pos), fmt))
                exact(0)
                if segments is None:
                    raise ParseError("HEAP DUMP END at %s without HEAP DUMP SEGMENTs before it" % _at(pos))
                self._finish(segments)
                segments = None
            if end >= self._next_release:
                self._release(end)
            pos = end
        if segments is not None:
            raise ParseError("file ends (%s) inside a heap dump: HEAP DUMP SEGMENTs from %s "
                             "are not closed by HEAP DUMP END" % (_at(size), _at(segments.offset)))
        self._resolve()

    # ------------------------------------------------------------ heap dump scan

    def _cross(self, p, tag, q, start, end, what):
        raise ParseError("%s sub-record at %s ends at %s, past the end (%s) of the %s%s"
                         % (SUB_TAGS.get(tag, "0x%02x" % tag), _at(p), _at(q), _at(end), what,
                            " (end of file)" if end == self.file_size else ""))

    def _bad_tag(self, p, tag, what):
        if tag in ANDROID_SUB_TAGS:
            raise ParseError("Android-only sub-record %s (0x%02x) at %s in the %s: not part of %s"
                             % (ANDROID_SUB_TAGS[tag], tag, _at(p), what, self.format))
        raise ParseError("unknown heap dump sub-record tag 0x%02x at %s in the %s" % (tag, _at(p), what))

    def _layout(self, hd, cid):
        """(size, refs unpacker) of an instance of class cid: its fields then its
        superclasses' fields; None if a class on the chain has no CLASS DUMP
        (yet) or the chain loops."""
        I, X = self.id_size, self._X
        seen = set()
        types = []
        c = cid
        while c:
            ci = hd.classes.get(c)
            if ci is None or c in seen:
                return None
            seen.add(c)
            types.extend(t for _n, t in ci._field_codes)
            c = ci.super_id
        size = 0
        fmt = ""
        pad = 0
        for t in types:
            if t == OBJECT:
                if pad:
                    fmt += "%dx" % pad
                fmt += X
                pad = 0
                size += I
            else:
                pad += PRIM_SIZE[t]
                size += PRIM_SIZE[t]
        return size, (struct.Struct(">" + fmt).unpack_from if fmt else None)

    def _new_cstate(self, hd, cid):
        lay = self._layout(hd, cid)
        if lay is None:
            return None
        st = [lay[0], lay[1], 0, 0, {}, [0, 0, 0]]
        hd._cstate[cid] = st
        return st

    def _mark(self, hd, oid):
        bm = hd._bitmap
        c = bm.get(oid >> _CHUNK_SHIFT)
        if c is None:
            c = bm[oid >> _CHUNK_SHIFT] = bytearray(_CHUNK_BYTES)
        j, b = (oid >> 3) & _CHUNK_MASK, 1 << (oid & 7)
        if c[j] & b:
            hd._dups.append(oid)
        else:
            c[j] |= b

    def _seen(self, hd, oid):
        c = hd._bitmap.get(oid >> _CHUNK_SHIFT)
        return c is not None and bool(c[(oid >> 3) & _CHUNK_MASK] & (1 << (oid & 7)))

    def _scan(self, hd, start, end, what):
        """All sub-records in [start, end).  The hot loop: everything it needs
        is in locals, and instances/arrays are handled inline."""
        hd.regions.append((start, end))
        mm = self._mm
        I, X = self.id_size, self._X
        bm = hd._bitmap
        dups_append = hd._dups.append
        pend_append = hd._pending.append
        defer_append = hd._deferred.append
        cstate = hd._cstate
        oarr = hd._oarr
        plen = hd._plen
        ptrace = hd._ptrace
        roots_append = hd.roots.append
        INST = struct.Struct(">" + X + "I" + X + "I").unpack_from
        OBJA = struct.Struct(">" + X + "II" + X).unpack_from
        PRIM = struct.Struct(">" + X + "IIB").unpack_from
        inst_h = 1 + 2 * I + 8
        obja_h = 1 + 2 * I + 8
        prim_h = 1 + I + 9
        acode = "Q" if I == 8 else "I"
        if array.array(acode).itemsize != I:
            acode = "L" if array.array("L").itemsize == I else "Q"
        roots = {}
        for tag, rest in ((ROOT_UNKNOWN, ""), (ROOT_JNI_GLOBAL, X), (ROOT_JNI_LOCAL, "Ii"),
                          (ROOT_JAVA_FRAME, "Ii"), (ROOT_NATIVE_STACK, "I"), (ROOT_STICKY_CLASS, ""),
                          (ROOT_THREAD_BLOCK, "I"), (ROOT_MONITOR_USED, ""), (ROOT_THREAD_OBJ, "II")):
            s = struct.Struct(">" + X + rest)
            roots[tag] = (ROOT_KINDS[tag], s.unpack_from, 1 + s.size)
        n_inst = n_oarr = n_prim = 0
        shift, cmask = _CHUNK_SHIFT, _CHUNK_MASK
        nrel = self._next_release
        p = start
        while p < end:
            if p >= nrel:
                self._release(p)
                nrel = self._next_release
                if len(hd._pending) > hd._compact_at:
                    self._compact_pending(hd)
                    pend_append = hd._pending.append
            tag = mm[p]
            if tag == INSTANCE_DUMP:
                h = p + inst_h
                if h > end:
                    self._cross(p, tag, h, start, end, what)
                oid, ts, cid, n = INST(mm, p + 1)
                q = h + n
                if q > end:
                    self._cross(p, tag, q, start, end, what)
                c = bm.get(oid >> shift)
                if c is None:
                    c = bm[oid >> shift] = bytearray(_CHUNK_BYTES)
                j = (oid >> 3) & cmask
                b = 1 << (oid & 7)
                if c[j] & b:
                    dups_append(oid)
                else:
                    c[j] |= b
                n_inst += 1
                st = cstate.get(cid)
                if st is None:
                    st = self._new_cstate(hd, cid)
                    if st is None:       # class (or a superclass) not dumped yet
                        defer_append(p)
                        p = q
                        continue
                st[2] += 1
                st[3] += n
                d = st[4]
                d[ts] = d.get(ts, 0) + 1
                if n == st[0]:
                    rs = st[1]
                    if rs is not None:
                        for r in rs(mm, h):
                            if r:
                                c = bm.get(r >> shift)
                                if c is None or not c[(r >> 3) & cmask] & (1 << (r & 7)):
                                    pend_append(r)
                else:
                    bad = st[5]
                    if not bad[0]:
                        bad[1], bad[2] = p, n
                    bad[0] += 1
                p = q
            elif tag == PRIM_ARRAY_DUMP:
                h = p + prim_h
                if h > end:
                    self._cross(p, tag, h, start, end, what)
                oid, ts, cnt, et = PRIM(mm, p + 1)
                es = _ESIZE[et] if et < 12 else 0
                if not es:
                    raise ParseError("PRIM ARRAY DUMP at %s has element type %d" % (_at(p), et))
                q = h + cnt * es
                if q > end:
                    self._cross(p, tag, q, start, end, what)
                c = bm.get(oid >> shift)
                if c is None:
                    c = bm[oid >> shift] = bytearray(_CHUNK_BYTES)
                j = (oid >> 3) & cmask
                b = 1 << (oid & 7)
                if c[j] & b:
                    dups_append(oid)
                else:
                    c[j] |= b
                n_prim += 1
                k = (et << 32) | cnt
                plen[k] = plen.get(k, 0) + 1
                k = (et << 32) | ts
                ptrace[k] = ptrace.get(k, 0) + 1
                p = q
            elif tag == OBJ_ARRAY_DUMP:
                h = p + obja_h
                if h > end:
                    self._cross(p, tag, h, start, end, what)
                oid, ts, cnt, acid = OBJA(mm, p + 1)
                q = h + cnt * I
                if q > end:
                    self._cross(p, tag, q, start, end, what)
                c = bm.get(oid >> shift)
                if c is None:
                    c = bm[oid >> shift] = bytearray(_CHUNK_BYTES)
                j = (oid >> 3) & cmask
                b = 1 << (oid & 7)
                if c[j] & b:
                    dups_append(oid)
                else:
                    c[j] |= b
                n_oarr += 1
                st = oarr.get(acid)
                if st is None:
                    st = oarr[acid] = [0, 0, {}, {}]
                st[0] += 1
                st[1] += cnt
                d = st[2]
                d[ts] = d.get(ts, 0) + 1
                d = st[3]
                d[cnt] = d.get(cnt, 0) + 1
                # In slices, so that a huge array costs no huge copy.
                for s0 in range(h, q, _SLICE_BYTES):
                    a = array.array(acode)
                    a.frombytes(mm[s0:min(q, s0 + _SLICE_BYTES)])
                    if _LITTLE:
                        a.byteswap()
                    for r in a:
                        if r:
                            c = bm.get(r >> shift)
                            if c is None or not c[(r >> 3) & cmask] & (1 << (r & 7)):
                                pend_append(r)
                p = q
            elif tag == CLASS_DUMP:
                p = self._class_dump(hd, p, start, end, what)
            else:
                lay = roots.get(tag)
                if lay is None:
                    self._bad_tag(p, tag, what)
                kind, unpack, sz = lay
                q = p + sz
                if q > end:
                    self._cross(p, tag, q, start, end, what)
                v = unpack(mm, p + 1)
                roots_append((kind, v[0], v[1:]))
                p = q
        hd.instances += n_inst
        hd.obj_arrays += n_oarr
        hd.prim_arrays += n_prim
        if len(hd._pending) > hd._compact_at:
            self._compact_pending(hd)

    def _compact_pending(self, hd):
        """Forget pending references whose target has been seen since: most
        forward references resolve a little further on, so this keeps the
        pending list near the number of references still unresolved."""
        bm = hd._bitmap
        shift, cmask = _CHUNK_SHIFT, _CHUNK_MASK
        keep = array.array("Q")
        ka = keep.append
        for r in hd._pending:
            c = bm.get(r >> shift)
            if c is None or not c[(r >> 3) & cmask] & (1 << (r & 7)):
                ka(r)
        hd._pending = keep
        hd._compact_at = max(2 * len(keep), 1 << 20)

    def _value(self, mm, p, t):
        """(value, size) of a value of type code t at p (no bounds check)."""
        if t == OBJECT:
            return self._s_id.unpack_from(mm, p)[0], self.id_size
        v = struct.unpack_from(">" + PRIM_FMT[t], mm, p)[0]
        if t == 5:
            v = chr(v)
        elif t == 4 and v in (0, 1):
            v = bool(v)
        return v, PRIM_SIZE[t]

    def _class_dump(self, hd, p, start, end, what):
        mm, I, X = self._mm, self.id_size, self._X
        q = p + 1

        def need(n):
            if q + n > end:
                self._cross(p, CLASS_DUMP, q + n, start, end, what)

        def typ(t, where):
            if t != OBJECT and t not in PRIM_SIZE:
                raise ParseError("CLASS DUMP at %s: %s has type code %d" % (_at(p), where, t))
            return I if t == OBJECT else PRIM_SIZE[t]

        need(7 * I + 4 + 4 + 2)
        cid, ts, sup, ldr, sgn, dom, r1, r2, isz = struct.unpack_from(">" + X + "I" + 6 * X + "I", mm, q)
        q += 7 * I + 8
        ci = ClassInfo(cid)
        ci.dumped, ci.offset, ci.trace = True, p, ts
        ci.super_id, ci.loader_id, ci.signers_id, ci.domain_id = sup, ldr, sgn, dom
        ci.reserved, ci.instance_size = (r1, r2), isz
        ncp = struct.unpack_from(">H", mm, q)[0]
        q += 2
        for k in range(ncp):
            need(3)
            idx, t = struct.unpack_from(">HB", mm, q)
            q += 3
            n = typ(t, "constant pool entry %d" % k)
            need(n)
            v, _n = self._value(mm, q, t)
            ci.constant_pool.append((idx, TYPE_NAMES[t], v))
            q += n
        need(2)
        nst = struct.unpack_from(">H", mm, q)[0]
        q += 2
        statics = []
        for k in range(nst):
            need(I + 1)
            nid, t = struct.unpack_from(">" + X + "B", mm, q)
            q += I + 1
            n = typ(t, "static field %d" % k)
            need(n)
            v, _n = self._value(mm, q, t)
            if t == 4 and not isinstance(v, bool):
                self._hp(hd, "boolean", "CLASS DUMP 0x%x at %s: boolean static field %d has value %d"
                                   % (cid, _at(p), k, v))
            statics.append((nid, t, v))
            q += n
        need(2)
        nif = struct.unpack_from(">H", mm, q)[0]
        q += 2
        for k in range(nif):
            need(I + 1)
            nid, t = struct.unpack_from(">" + X + "B", mm, q)
            q += I + 1
            typ(t, "instance field %d" % k)
            ci._field_codes.append((nid, t))
        ci.statics = statics           # names resolved in _resolve()
        if cid in hd.classes:
            self._hp(hd, "class_dump_twice", "CLASS DUMP 0x%x at %s: the class was already dumped at %s"
                               % (cid, _at(p), _at(hd.classes[cid].offset)))
        hd.classes[cid] = ci
        self._mark(hd, cid)
        self._used_traces[ts].add("CLASS DUMP")
        # References: the class object's own (super, loader, ...) and statics'.
        for r in [sup, ldr, sgn, dom] + [v for (_i, t, v) in ci.constant_pool if t == "object"] \
                + [v for (_n, t, v) in statics if t == OBJECT]:
            if r and not self._seen(hd, r):
                hd._pending.append(r)
        return q

    def _finish(self, hd):
        """End of one heap dump: deferred instances, pending references, and the
        per-heap-dump problems."""
        mm, I = self._mm, self.id_size
        INST = struct.Struct(">" + self._X + "I" + self._X + "I").unpack_from
        inst_h = 1 + 2 * I + 8
        for p in hd._deferred:
            oid, ts, cid, n = INST(mm, p + 1)
            st = hd._cstate.get(cid) or self._new_cstate(hd, cid)
            if st is None:
                # Count it all the same (size unknown); reported below.
                st = hd._cstate[cid] = [None, None, 0, 0, {}, [0, 0, 0]]
            st[2] += 1
            st[3] += n
            st[4][ts] = st[4].get(ts, 0) + 1
            if st[0] is None:
                continue
            if n == st[0]:
                if st[1] is not None:
                    for r in st[1](mm, p + inst_h):
                        if r and not self._seen(hd, r):
                            hd._pending.append(r)
            else:
                if not st[5][0]:
                    st[5][1], st[5][2] = p, n
                st[5][0] += 1
        hd._deferred = None
        for cid, st in hd._cstate.items():
            if st[0] is None:
                missing = []
                c, seen = cid, set()
                while c and c not in seen:
                    seen.add(c)
                    ci = hd.classes.get(c)
                    if ci is None:
                        missing.append(c)
                        break
                    c = ci.super_id
                why = ("no CLASS DUMP for 0x%x" % missing[0]) if missing else "its superclass chain loops"
                self._hp(hd, "instance_class", "%d INSTANCE DUMPs of class 0x%x whose layout is unknown (%s)"
                         % (st[2], cid, why))
        # References not seen when they were read: forward ones, or dangling.
        self._compact_pending(hd)
        dangling = collections.Counter(hd._pending)
        hd._pending = None
        hd.dangling = sum(dangling.values())
        hd.dangling_examples = [r for r, _n in dangling.most_common(5)]
        # All the distinct missing ids (up to a limit), for callers that need to
        # know where every one comes from (referrers()).
        hd.dangling_targets = set(list(dangling)[:_DANGLING_KEEP])
        # Roots: every root's object must be in the dump (0 allowed: a thread
        # object may be 0 for a thread attached through JNI).
        for kind, oid, _e in hd.roots:
            if oid and not self._seen(hd, oid):
                self._hp(hd, "root_dangling",
                         "GC root %s -> 0x%x: no such object in the heap dump" % (kind, oid))
        hd.duplicates = len(hd._dups)
        hd.duplicate_examples = list(hd._dups[:5])
        hd._dups = None
        # Keep the bitmap: contains() and the quirk checks need to know which ids exist.
        hd.bitmap_bytes = len(hd._bitmap) * _CHUNK_BYTES

    def _resolve(self):
        """After the whole file: names of classes, frames, fields."""
        S = self.strings
        for ci in self.load_class_by_serial.values():
            ci.name = S.get(ci.name_id)
            ci.java_name = java_name(ci.name)
        for hd in self.heap_dumps:
            for cid, ci in hd.classes.items():
                lc = self._loads.get(cid)
                if lc is not None:
                    ci.serial, ci.name, ci.java_name = lc.serial, lc.name, lc.java_name
                    ci.load_trace, ci.name_id, ci.unloaded = lc.load_trace, lc.name_id, lc.unloaded
                ci.fields = [(S.get(n, "<UTF8 0x%x>" % n), TYPE_NAMES[t]) for n, t in ci._field_codes]
                for n, _t, _v in ci.statics:
                    self._used_names[n].add("static field name")
                ci.statics = [(S.get(n, "<UTF8 0x%x>" % n), TYPE_NAMES[t], v) for n, t, v in ci.statics]
                for n, _t in ci._field_codes:
                    self._used_names[n].add("instance field name")
        self.classes = dict(self._loads)
        if self.heap:
            self.classes.update(self.heap.classes)
        # Prefer the merged ClassInfo (LOAD CLASS + CLASS DUMP) when it is the same load.
        self.load_class_by_serial = {
            ser: (self.classes[ci.id] if getattr(self.classes.get(ci.id), "serial", None) == ser else ci)
            for ser, ci in self.load_class_by_serial.items()}
        for fid, f in list(self.frames.items()):
            # Names as text; None where the UTF8 is missing (reported by check()) or 0.
            self.frames[fid] = f._replace(method=S.get(f.method), signature=S.get(f.signature),
                                          source=S.get(f.source) if f.source else None)

    # ------------------------------------------------------------ checks

    def check(self):
        """Integrity problems of the whole file (list of strings, also kept in
        self.problems).  Checked:
          - parse-time: duplicate UTF8 ids / LOAD CLASS serials / frame ids /
            trace serials / thread serials, UNLOAD or END THREAD of unknown
            serials, non-UTF-8 strings, boolean statics not 0/1, CPU SAMPLES
            counts adding up to more than the total;
          - every INSTANCE DUMP's class has a CLASS DUMP (and so do all its
            superclasses), and the instance's field-byte length equals the sum
            of the field sizes of its class and superclasses (objects at id size);
          - every CLASS DUMP's "instance size" equals that same sum (0 for arrays);
          - every object id referenced by an instance's object fields, an object
            array's elements, a class's super/loader/signers/protection domain,
            constant pool and static object values, and every GC root, is an
            object, array or class in the same heap dump, or 0;
          - every class's super id has a CLASS DUMP; only java.lang.Object may
            have super 0 (kind 'super_zero': HotSpot gives interfaces
            java.lang.Object as super, but a writer using JNI GetSuperclass
            gets NULL for interfaces, and the dump cannot tell interfaces apart);
          - every CLASS DUMP has a LOAD CLASS with the same class object id;
          - every OBJ ARRAY DUMP's class id has a CLASS DUMP of an array class;
          - no object id appears twice in one heap dump;
          - every UTF8 id used as a name (LOAD CLASS, fields, statics, frames,
            START THREAD) exists;
          - every stack trace serial used (objects, classes, LOAD CLASS, roots,
            START THREAD, ALLOC SITES, CPU SAMPLES) has a STACK TRACE (0 allowed);
          - every frame id in a STACK TRACE has a STACK FRAME, every STACK FRAME's
            class serial has a LOAD CLASS;
          - every thread serial used by a root or a non-empty stack trace is
            declared by a START THREAD or a ROOT THREAD OBJECT (0 allowed), and a
            JAVA FRAME / JNI LOCAL root's frame number is -1 or within its
            thread's stack trace.
        """
        P = list(self._parse_problems)
        S = self.strings

        def add(kind, text):
            P.append(Problem(kind, text))

        def few(xs, fmt="0x%x"):
            xs = list(xs)
            return ", ".join(fmt % x for x in xs[:5]) + (" ..." if len(xs) > 5 else "")

        used_traces = collections.defaultdict(set, {k: set(v) for k, v in self._used_traces.items()})
        used_names = collections.defaultdict(set, {k: set(v) for k, v in self._used_names.items()})
        thread_serials = set(self.threads)
        for hd in self.heap_dumps:
            for kind, _o, e in hd.roots:
                if kind == "thread_object":
                    thread_serials.add(e[0])
        if self.repeated_loads:
            names = [self.load_class_by_serial[b].java_name or "?" for _c, _a, b in self.repeated_loads]
            add("load_class_again", "%d classes have a second LOAD CLASS with the same id and name "
                "(%d of them array classes), e.g. %s" % (
                    len(names), sum(1 for n in names if n.startswith("[")),
                    ", ".join("%s serials %d and %d" % (n, a, b)
                              for n, (_c, a, b) in list(zip(names, self.repeated_loads))[:3])))
        for hd in self.heap_dumps:
            tag = "heap dump #%d (%s): " % (hd.index, _at(hd.offset)) if len(self.heap_dumps) > 1 else ""
            P.extend(Problem(x.kind, tag + x) for x in hd.problems)
            for cid, st in hd._cstate.items():
                for ts in st[4]:
                    used_traces[ts].add("INSTANCE DUMP")
                if st[0] is not None and st[5][0]:
                    add("instance_length", tag + "%d INSTANCE DUMPs of %s have a field-byte length that is not the "
                             "%d bytes of the class's fields (first at %s: %d bytes)"
                             % (st[5][0], self._cname(hd, cid), st[0], _at(st[5][1]), st[5][2]))
            for st in hd._oarr.values():
                for ts in st[2]:
                    used_traces[ts].add("OBJ ARRAY DUMP")
            for k in hd._ptrace:
                used_traces[k & 0xFFFFFFFF].add("PRIM ARRAY DUMP")
            for cid, ci in hd.classes.items():
                nm = self._cname(hd, cid)
                if cid not in self._loads:
                    add("class_without_load", tag + "CLASS DUMP 0x%x at %s has no LOAD CLASS" % (cid, _at(ci.offset)))
                is_array = ci.java_name is not None and ci.java_name.startswith("[")
                lay = self._layout(hd, cid)
                if is_array:
                    if ci.instance_size != 0 or ci._field_codes:
                        add("instance_size", tag + "array class %s: instance size %d and %d instance fields "
                            "(expected 0, 0)" % (nm, ci.instance_size, len(ci._field_codes)))
                elif lay is not None and ci.instance_size != lay[0]:
                    add("instance_size", tag + "CLASS DUMP of %s: instance size %d, but its and its superclasses' "
                             "fields take %d bytes" % (nm, ci.instance_size, lay[0]))
                if ci.super_id == 0:
                    if ci.java_name != "java.lang.Object":
                        add("super_zero", tag + "class %s has no superclass (only java.lang.Object may)" % nm)
                elif ci.super_id not in hd.classes:
                    add("superclass", tag + "class %s: superclass 0x%x has no CLASS DUMP" % (nm, ci.super_id))
            for cid in hd._oarr:
                ci = hd.classes.get(cid)
                if ci is None:
                    add("array_class", tag + "OBJ ARRAY DUMPs (%d) with class 0x%x, which has no CLASS DUMP"
                             % (hd._oarr[cid][0], cid))
                elif not (ci.java_name or "").startswith("["):
                    add("array_class", tag + "OBJ ARRAY DUMPs (%d) with class %s, not an array class"
                             % (hd._oarr[cid][0], ci.java_name))
            if hd.dangling:
                if hd._dangling_text is None:   # a re-read: do it once
                    ex = self.referrers(hd.dangling_examples, limit=5, heap_dump=hd)
                    hd._dangling_text = "%d references to objects not in the heap dump; e.g. %s" % (
                        hd.dangling, "; ".join("0x%x from %s" % (t, ", ".join(ex.get(t, ["?"])))
                                               for t in hd.dangling_examples))
                add("dangling", tag + hd._dangling_text)
            if hd.duplicates:
                add("duplicate_id", tag + "%d object ids dumped more than once: %s"
                    % (hd.duplicates, few(hd.duplicate_examples)))
            # Roots' thread serials and frame numbers.
            thread_trace = {e[0]: e[1] for k, _o, e in hd.roots if k == "thread_object"}
            bad_threads = collections.Counter()
            bad_frames = []
            for kind, oid, e in hd.roots:
                if kind in ("jni_local", "java_frame", "native_stack", "thread_block"):
                    if e[0] and e[0] not in thread_serials:
                        bad_threads[e[0]] += 1
                if kind in ("jni_local", "java_frame") and e[1] != -1:
                    tr = self.traces.get(thread_trace.get(e[0], self._start_trace(e[0])))
                    if tr is None or not 0 <= e[1] < len(tr[1]):
                        bad_frames.append((kind, oid, e))
                if kind == "thread_object":
                    used_traces[e[1]].add("ROOT THREAD OBJECT")
            if bad_threads:
                add("root_thread", tag + "GC roots name thread serials never declared (START THREAD / ROOT THREAD "
                         "OBJECT): %s" % few(bad_threads, "%d"))
            if bad_frames:
                add("root_frame", tag + "%d JAVA FRAME / JNI LOCAL roots have a frame number outside their thread's "
                         "stack trace, e.g. %s" % (len(bad_frames), ", ".join(
                             "%s 0x%x thread %d frame %d" % (k, o, e[0], e[1]) for k, o, e in bad_frames[:3])))
        missing_names = sorted(n for n in used_names if n not in S)
        if missing_names:
            add("names", "%d UTF8 ids used as names are not defined, e.g. %s" % (
                len(missing_names), "; ".join("0x%x (%s)" % (n, ", ".join(sorted(used_names[n]))[:80])
                                             for n in missing_names[:5])))
        missing_traces = sorted(t for t in used_traces if t and t not in self.traces)
        if missing_traces:
            add("traces", "%d stack trace serials used but not defined by a STACK TRACE, e.g. %s" % (
                len(missing_traces), "; ".join("%d (%s)" % (t, ", ".join(sorted(used_traces[t])))
                                              for t in missing_traces[:5])))
        missing_frames = collections.Counter()
        for serial, (tser, fids) in self.traces.items():
            for f in fids:
                if f not in self.frames:
                    missing_frames[f] += 1
            if tser and fids and tser not in thread_serials:
                add("trace_thread", "STACK TRACE %d names thread serial %d, never declared" % (serial, tser))
        if missing_frames:
            add("frames", "%d frame ids in STACK TRACEs have no STACK FRAME, e.g. %s"
                % (len(missing_frames), few(missing_frames)))
        bad_cser = sorted({f.class_serial for f in self.frames.values()
                           if f.class_serial not in self.load_class_by_serial})
        if bad_cser:
            add("frame_class", "STACK FRAMEs name class serials without LOAD CLASS: %s" % few(bad_cser, "%d"))
        for i, a in enumerate(self.alloc_sites):
            for site in a["sites"]:
                if site[1] and site[1] not in self.load_class_by_serial:
                    add("alloc_sites", "ALLOC SITES #%d: class serial %d has no LOAD CLASS" % (i, site[1]))
                    break
        self.problems = P
        return P

    def _pp(self, kind, text):
        self._parse_problems.append(Problem(kind, text))

    def _hp(self, hd, kind, text):
        hd.problems.append(Problem(kind, text))

    def _start_trace(self, tser):
        t = self.threads.get(tser)
        return t.trace if t else None

    def _cname(self, hd, cid):
        ci = hd.classes.get(cid) or self._loads.get(cid)
        if ci is not None and ci.java_name:
            return ci.java_name
        return "class 0x%x" % cid

    # ------------------------------------------------------------ re-reading

    def _subrecords(self, hd):
        """Yield (tag, p, q) for every sub-record of a heap dump (already checked)."""
        mm, I = self._mm, self.id_size
        u4 = struct.Struct(">I").unpack_from
        for start, end in hd.regions:
            p = done = start
            while p < end:
                tag = mm[p]
                if tag == INSTANCE_DUMP:
                    q = p + 1 + 2 * I + 8 + u4(mm, p + 1 + 2 * I + 4)[0]
                elif tag == PRIM_ARRAY_DUMP:
                    q = p + 1 + I + 9 + u4(mm, p + 1 + I + 4)[0] * PRIM_SIZE[mm[p + I + 9]]
                elif tag == OBJ_ARRAY_DUMP:
                    q = p + 1 + 2 * I + 8 + u4(mm, p + 1 + I + 4)[0] * I
                elif tag == CLASS_DUMP:
                    q = self._class_dump_end(p)
                else:
                    q = p + 1 + {ROOT_UNKNOWN: I, ROOT_JNI_GLOBAL: 2 * I, ROOT_JNI_LOCAL: I + 8,
                                 ROOT_JAVA_FRAME: I + 8, ROOT_NATIVE_STACK: I + 4, ROOT_STICKY_CLASS: I,
                                 ROOT_THREAD_BLOCK: I + 4, ROOT_MONITOR_USED: I, ROOT_THREAD_OBJ: I + 8}[tag]
                yield tag, p, q
                p = q
                if p - done >= _RELEASE_STEP:
                    self._drop_pages(done, p)
                    done = p
            self._drop_pages(done, end)

    def _class_dump_end(self, p):
        mm, I = self._mm, self.id_size
        q = p + 1 + 7 * I + 8
        for k in range(3):
            n = struct.unpack_from(">H", mm, q)[0]
            q += 2
            for _ in range(n):
                if k == 0:
                    t = mm[q + 2]
                    q += 3
                else:
                    t = mm[q + I]
                    q += I + 1
                if k < 2:
                    q += I if t == OBJECT else PRIM_SIZE[t]
        return q

    def _decode_instance(self, hd, p):
        mm, I, X = self._mm, self.id_size, self._X
        oid, ts, cid, _n = struct.unpack_from(">" + X + "I" + X + "I", mm, p + 1)
        q = p + 1 + 2 * I + 8
        fields = []
        c, seen = cid, set()
        while c and c not in seen:
            seen.add(c)
            ci = hd.classes.get(c)
            if ci is None:
                break
            for (fname, tname), (_nid, t) in zip(ci.fields, ci._field_codes):
                v, sz = self._value(mm, q, t)
                fields.append((ci.java_name, fname, tname, v))
                q += sz
            c = ci.super_id
        return Instance(oid, ts, cid, self._cname(hd, cid), fields)

    def instances(self, class_name, heap_dump=None):
        """Decoded instances of exactly the class named class_name (any name
        form), in dump order.  Re-reads the heap dump."""
        hd = heap_dump or self.heap
        jn = java_name(class_name)
        cids = {cid for cid, ci in hd.classes.items() if ci.java_name == jn}
        if not cids:
            raise KeyError("no CLASS DUMP for %r" % class_name)
        mm, I = self._mm, self.id_size
        s = struct.Struct(">" + self._X).unpack_from
        out = []
        for tag, p, _q in self._subrecords(hd):
            if tag == INSTANCE_DUMP and s(mm, p + 1 + I + 4)[0] in cids:
                out.append(self._decode_instance(hd, p))
        return out

    def fetch(self, ids, heap_dump=None):
        """{id: Instance | ObjArray | PrimArray | ClassInfo} for the given ids
        (missing ids are absent).  Re-reads the heap dump."""
        hd = heap_dump or self.heap
        want = set(ids)
        out = {i: hd.classes[i] for i in want if i in hd.classes}
        want -= set(out)
        if not want:
            return out
        mm, I, X = self._mm, self.id_size, self._X
        s = struct.Struct(">" + X).unpack_from
        for tag, p, q in self._subrecords(hd):
            if tag not in (INSTANCE_DUMP, OBJ_ARRAY_DUMP, PRIM_ARRAY_DUMP):
                continue
            oid = s(mm, p + 1)[0]
            if oid not in want:
                continue
            if tag == INSTANCE_DUMP:
                out[oid] = self._decode_instance(hd, p)
            elif tag == OBJ_ARRAY_DUMP:
                _o, ts, cnt, acid = struct.unpack_from(">" + X + "II" + X, mm, p + 1)
                els = list(struct.unpack_from(">%d%s" % (cnt, X), mm, p + 1 + 2 * I + 8))
                out[oid] = ObjArray(oid, ts, acid, self._cname(hd, acid), els)
            else:
                _o, ts, cnt, et = struct.unpack_from(">" + X + "IIB", mm, p + 1)
                vals = list(struct.unpack_from(">%d%s" % (cnt, PRIM_FMT[et]), mm, p + 1 + I + 9))
                if et == 4:
                    vals = [bool(v) if v in (0, 1) else v for v in vals]
                elif et == 5:
                    vals = "".join(map(chr, vals))
                out[oid] = PrimArray(oid, ts, et, vals)
            want.discard(oid)
            if not want:
                break
        return out

    def string_value(self, oid, heap_dump=None):
        """The text of a java.lang.String object (JDK 9+ compact strings:
        byte[] value + coder; JDK 8: char[] value).  None if not a String."""
        hd = heap_dump or self.heap
        s = self.fetch([oid], hd).get(oid)
        if not isinstance(s, Instance) or s.class_name != "java.lang.String":
            return None
        val = self.fetch([s["value"]], hd).get(s["value"])
        if val is None:
            return None
        if val.type == "char":
            return val.values
        coder = dict((n, v) for _c, n, _t, v in s.fields).get("coder", 0)
        b = bytes(x & 0xFF for x in val.values)
        return b.decode("latin-1") if coder == 0 else b.decode("utf-16-le" if _LITTLE else "utf-16-be",
                                                              "surrogatepass")

    def referrers(self, targets, limit=5, heap_dump=None):
        """{target id: ['<what> 0x<id> ...', ...]} for up to `limit` referrers
        of each target: instances' fields, object array elements, classes'
        super/loader/signers/protection domain/statics, roots.  Re-reads the
        heap dump (only decoding the objects that do refer to a target)."""
        hd = heap_dump or self.heap
        want = set(targets)
        out = collections.defaultdict(list)
        mm, I, X = self._mm, self.id_size, self._X

        def note(t, text):
            if len(out[t]) < limit:
                out[t].append(text)

        for kind, oid, _e in hd.roots:
            if oid in want:
                note(oid, "root %s" % kind)
        head = struct.Struct(">" + X + "I" + X + "I").unpack_from
        ohead = struct.Struct(">" + X + "II" + X).unpack_from
        acode = "Q" if I == 8 else "I"
        for tag, p, q in self._subrecords(hd):
            if tag == INSTANCE_DUMP:
                _oid, _ts, cid, n = head(mm, p + 1)
                st = hd._cstate.get(cid)
                if st is None or st[1] is None or st[0] != n:
                    continue
                if want.isdisjoint(st[1](mm, p + 1 + 2 * I + 8)):
                    continue
                inst = self._decode_instance(hd, p)
                for c, fn, t, v in inst.fields:
                    if t == "object" and v in want:
                        note(v, "%s 0x%x field %s.%s" % (inst.class_name, inst.id, c, fn))
            elif tag == OBJ_ARRAY_DUMP:
                oid, _ts, _cnt, acid = ohead(mm, p + 1)
                a = array.array(acode)
                a.frombytes(mm[p + 1 + 2 * I + 8:q])
                if _LITTLE:
                    a.byteswap()
                if want.isdisjoint(a):
                    continue
                for k, v in enumerate(a):
                    if v in want:
                        note(v, "%s 0x%x [%d]" % (self._cname(hd, acid), oid, k))
        for cid, ci in hd.classes.items():
            refs = [("super", ci.super_id), ("loader", ci.loader_id), ("signers", ci.signers_id),
                    ("protection domain", ci.domain_id)] + [("static " + n, v) for n, t, v in ci.statics
                                                            if t == "object"]
            for what, v in refs:
                if v in want:
                    note(v, "class %s %s" % (self._cname(hd, cid), what))
        return dict(out)

    def contains(self, oid, heap_dump=None):
        """True if oid is an object, array or class of the heap dump."""
        return self._seen(heap_dump or self.heap, oid)


def read(path):
    """Parse an HPROF binary file; returns a Dump whose .problems is the list
    check() returns.  Raises ParseError on any structural error.  The file
    stays mapped for instances()/fetch()/referrers(); call Dump.close() (or use
    `with`) to release it early."""
    d = Dump(path)
    d._open()
    try:
        d._parse()
    except ParseError as e:
        d.close()
        raise ParseError("%s: %s" % (path, e)) from None
    except struct.error as e:  # cannot happen if the bounds checks are right
        d.close()
        raise ParseError("%s: internal bounds error: %s" % (path, e)) from None
    d.check()
    return d


# ---------------------------------------------------------------- self-test

class _Synth:
    """Builds small HPROF files for the self-test (test data, not a writer)."""

    def __init__(self, id_size=8, fmt="JAVA PROFILE 1.0.2"):
        self.I, self.X = id_size, ("Q" if id_size == 8 else "I")
        self.out = bytearray(fmt.encode() + b"\0" + struct.pack(">III", id_size, 0x18C, 0x12345678))
        self.bounds = [len(self.out)]        # record boundaries

    def id(self, *v):
        return struct.pack(">%d%s" % (len(v), self.X), *v)

    def rec(self, tag, body, length=None):
        self.out += struct.pack(">BII", tag, 0, len(body) if length is None else length) + body
        self.bounds.append(len(self.out))

    def val(self, t, v):
        return self.id(v) if t == OBJECT else struct.pack(">" + PRIM_FMT[t], v)

    def utf8(self, sid, text):
        self.rec(UTF8, self.id(sid) + text.encode())

    def load(self, serial, cid, nid, ts=0):
        self.rec(LOAD_CLASS, struct.pack(">I", serial) + self.id(cid) + struct.pack(">I", ts) + self.id(nid))

    def trace(self, serial, tser, fids=()):
        self.rec(TRACE, struct.pack(">III", serial, tser, len(fids)) + self.id(*fids))

    def class_dump(self, cid, sup, statics=(), fields=(), isz=None, ts=0, loader=0):
        # isz defaults to this class's own fields: pass it when there is a superclass with fields
        size = sum(self.I if t == OBJECT else PRIM_SIZE[t] for _n, t in fields) if isz is None else isz
        b = b"\x20" + self.id(cid) + struct.pack(">I", ts) + self.id(sup, loader, 0, 0, 0, 0)
        b += struct.pack(">IH", size, 0) + struct.pack(">H", len(statics))
        for n, t, v in statics:
            b += self.id(n) + bytes([t]) + self.val(t, v)
        b += struct.pack(">H", len(fields))
        for n, t in fields:
            b += self.id(n) + bytes([t])
        return b

    def instance(self, oid, cid, values, ts=0, extra=b""):
        body = b"".join(self.val(t, v) for t, v in values) + extra
        return b"\x21" + self.id(oid) + struct.pack(">I", ts) + self.id(cid) + struct.pack(">I", len(body)) + body

    def obj_array(self, oid, acid, els, ts=0):
        return b"\x22" + self.id(oid) + struct.pack(">II", ts, len(els)) + self.id(acid) + self.id(*els)

    def prim_array(self, oid, et, vals, ts=0):
        return (b"\x23" + self.id(oid) + struct.pack(">IIB", ts, len(vals), et)
                + struct.pack(">%d%s" % (len(vals), PRIM_FMT[et]), *vals))

    def root(self, tag, oid, *extra):
        fmt = {ROOT_JNI_GLOBAL: self.X, ROOT_JNI_LOCAL: "Ii", ROOT_JAVA_FRAME: "Ii", ROOT_NATIVE_STACK: "I",
               ROOT_THREAD_BLOCK: "I", ROOT_THREAD_OBJ: "II"}.get(tag, "")
        return bytes([tag]) + self.id(oid) + struct.pack(">" + fmt, *extra)


def _scenario(id_size=8, fmt="JAVA PROFILE 1.0.2", mutate=None):
    """A small valid heap: Object, Point{int x; Point next}, Sub extends Point
    {long y}, Object[], int[]; all kinds of roots.  mutate(name, value) may
    replace parts (by name) to make it invalid."""
    m = mutate or (lambda name, v: v)
    w = _Synth(id_size, fmt)
    for sid, text in ((1, "java/lang/Object"), (2, "Point"), (3, "x"), (4, "next"), (5, "[Ljava/lang/Object;"),
                      (6, "sCount"), (7, "Sub"), (8, "y"), (9, "sSelf"), (10, "sD"), (11, "sC"), (12, "sZ"),
                      (13, "caf\u00e9 \U0001F600")):
        w.utf8(sid, text)
    w.rec(UTF8, w.id(14) + b"\xc0\x80A\xed\xa0\xbd\xed\xb8\x80")    # modified UTF-8: NUL, 'A', U+1F600
    for serial, cid, nid in m("loads", ((1, 0x100, 1), (2, 0x200, 2), (3, 0x300, 7), (4, 0x400, 5))):
        w.load(serial, cid, nid, ts=1)
    w.trace(1, 0)
    subs = [
        w.class_dump(0x100, 0),
        w.class_dump(0x200, 0x100, statics=[(6, 10, 7), (9, OBJECT, 0x200), (10, 7, -2.5), (11, 5, 0x20AC),
                                            (12, 4, 1)],
                     fields=[(3, 10), (4, OBJECT)], isz=m("point_isz", None)),
        w.class_dump(0x300, m("sub_super", 0x200), fields=[(m("field_name", 8), 11)], isz=8 + 4 + id_size),
        w.class_dump(0x400, 0x100),
    ]
    subs = m("classes", subs)
    objs = [
        w.instance(0x1000, 0x200, [(10, 1), (OBJECT, m("next", 0x1010))], ts=m("ts", 1)),
        w.instance(0x1010, m("sub_cid", 0x300), [(11, -5), (10, 2), (OBJECT, 0x1000)], extra=m("extra", b"")),
        w.obj_array(m("arr_id", 0x1020), 0x400, [0x1000, 0, 0x1010]),
        w.prim_array(0x1030, 10, [1, 2, 3]),
        w.root(ROOT_STICKY_CLASS, 0x100), w.root(ROOT_THREAD_OBJ, 0x1000, 1, 1),
        w.root(ROOT_JAVA_FRAME, 0x1020, 1, -1), w.root(ROOT_JNI_GLOBAL, 0x1030, 0xABC),
        w.root(ROOT_JNI_LOCAL, 0x1010, 1, -1), w.root(ROOT_NATIVE_STACK, 0x1000, 1),
        w.root(ROOT_THREAD_BLOCK, 0x1000, 1), w.root(ROOT_MONITOR_USED, 0x1010), w.root(ROOT_UNKNOWN, 0x1030),
    ]
    m("heap", None)
    layout = m("layout", "segments" if fmt.endswith("1.0.2") else "one")
    if layout == "one":
        w.rec(HEAP_DUMP, b"".join(subs + objs))
    elif layout == "objects_first":
        w.rec(HEAP_DUMP_SEGMENT, b"".join(objs))
        w.rec(HEAP_DUMP_SEGMENT, b"".join(subs))
        w.rec(HEAP_DUMP_END, b"")
    elif layout == "split":          # the first instance cut between two segments
        blob = b"".join(subs + objs)
        cut = len(b"".join(subs)) + 5
        w.rec(HEAP_DUMP_SEGMENT, blob[:cut])
        w.rec(HEAP_DUMP_SEGMENT, blob[cut:])
        w.rec(HEAP_DUMP_END, b"")
    elif layout == "twice":
        w.rec(HEAP_DUMP, b"".join(subs + objs))
        w.rec(HEAP_DUMP, b"".join(subs + objs[:2]))
    else:
        w.rec(HEAP_DUMP_SEGMENT, b"".join(subs))
        w.rec(HEAP_DUMP_SEGMENT, b"".join(objs))
        if layout != "no_end":
            w.rec(HEAP_DUMP_END, b"")
    m("tail", w)
    return w


def selftest(verbose=False):
    """Run the reader on synthetic files; returns the number of failures."""
    import tempfile
    fails = []
    tmp = tempfile.mkdtemp(prefix="hprof_reader_selftest.")
    counter = [0]

    def path_of(w):
        counter[0] += 1
        p = os.path.join(tmp, "t%d.hprof" % counter[0])
        with open(p, "wb") as f:
            f.write(w.out if isinstance(w, _Synth) else w)
        return p

    def expect(cond, what):
        if not cond:
            fails.append(what)
        elif verbose:
            print("ok  ", what)

    def parse_error(data, text, what):
        try:
            read(path_of(data)).close()
        except ParseError as e:
            expect(text in str(e), "%s: error %r mentions %r" % (what, str(e), text))
            return
        except Exception as e:  # noqa: BLE001 - anything else is a reader bug
            fails.append("%s: %s instead of ParseError" % (what, e.__class__.__name__))
            return
        fails.append("%s: no ParseError" % what)

    def kinds(mutations, what, want, **kw):
        def mut(name, v):
            return mutations.get(name, v)
        try:
            d = read(path_of(_scenario(mutate=mut, **kw)))
        except ParseError as e:
            fails.append("%s: unexpected ParseError %s" % (what, e))
            return None
        got = sorted({p.kind for p in d.problems})
        expect(got == sorted(want), "%s: problem kinds %s (want %s) %s" % (what, got, sorted(want), d.problems))
        return d

    # --- valid files, both id sizes and formats, every layout
    for ids in (8, 4):
        for fmt, layout in (("JAVA PROFILE 1.0.2", "segments"), ("JAVA PROFILE 1.0.1", "one"),
                            ("JAVA PROFILE 1.0.2", "objects_first"), ("JAVA PROFILE 1.0.2", "one")):
            tag = "id %d %s %s" % (ids, fmt[-5:], layout)
            d = kinds({"layout": layout}, tag + " valid", [], id_size=ids, fmt=fmt)
            if d is None:
                continue
            expect(d.id_size == ids and d.format == fmt and d.timestamp_ms == (0x18C << 32 | 0x12345678),
                   tag + ": header")
            pt, sub = d.class_by_name("Point"), d.class_by_name("Sub")
            expect(d.instance_counts == {pt.id: 1, sub.id: 1}, tag + ": instance counts")
            expect(d.array_counts == {"[Ljava.lang.Object;": (1, 3), "[I": (1, 3)}, tag + ": array counts")
            expect(d.objects == 4 and len(d.roots) == 9, tag + ": objects and roots")
            expect(d.trace_counts == collections.Counter({("Point", 1): 1, ("Sub", 0): 1,
                                                          ("[Ljava.lang.Object;", 0): 1, ("[I", 0): 1}),
                   tag + ": trace counts")
            expect(pt.statics == [("sCount", "int", 7), ("sSelf", "object", pt.id), ("sD", "double", -2.5),
                                  ("sC", "char", "\u20ac"), ("sZ", "boolean", True)], tag + ": statics")
            expect(pt.fields == [("x", "int"), ("next", "object")] and sub.super_id == pt.id, tag + ": fields")
            s = d.instances("Sub")[0]
            expect([(c, n, v) for c, n, _t, v in s.fields] == [("Sub", "y", -5), ("Point", "x", 2),
                                                               ("Point", "next", 0x1000)], tag + ": Sub fields")
            f = d.fetch([0x1020, 0x1030, 0x1000, pt.id, 0xDEAD])
            expect(f[0x1020].elements == [0x1000, 0, 0x1010] and f[0x1030].values == [1, 2, 3]
                   and f[0x1000]["next"] == 0x1010 and f[pt.id] is pt and 0xDEAD not in f, tag + ": fetch")
            expect(d.strings[13] == "caf\u00e9 \U0001F600" and d.strings[14] == "\0A\U0001F600",
                   tag + ": (modified) UTF-8")
            expect(d.referrers([0x1010]) == {0x1010: ["root jni_local", "root monitor_used",
                                                      "Point 0x1000 field Point.next",
                                                      "[Ljava.lang.Object; 0x1020 [2]"]}, tag + ": referrers")
            expect([r[1] for r in d.histogram()] == [1, 1, 1, 1], tag + ": histogram")
            d.close()

    # --- structure errors
    good = _scenario().out
    w = _scenario()
    boundaries = set(w.bounds)
    bad_cuts = 0
    for cut in range(1, len(good)):
        try:
            read(path_of(good[:cut])).close()
            # A cut inside a record, or after the first HEAP DUMP SEGMENT (bounds[-4]:
            # the heap dump is segment, segment, end) must fail.
            if cut not in boundaries or cut > w.bounds[-4]:
                bad_cuts += 1
        except ParseError:
            pass
        except Exception as e:  # noqa: BLE001
            fails.append("truncated at %d: %s instead of ParseError" % (cut, e.__class__.__name__))
            break
    expect(bad_cuts == 0, "every truncation inside a record or a heap dump is a ParseError (%d not)" % bad_cuts)
    parse_error(good[:len(good) - 3], "file truncated", "truncated last record")
    parse_error(_scenario(mutate=lambda n, v: "split" if n == "layout" else v), "past the end",
                "sub-record crossing a segment boundary")
    parse_error(_scenario(mutate=lambda n, v: "no_end" if n == "layout" else v), "not closed by HEAP DUMP END",
                "segments without END")
    parse_error(_scenario(fmt="JAVA PROFILE 1.0.1", mutate=lambda n, v: "segments" if n == "layout" else v),
                "segments are 1.0.2 only", "segment in 1.0.1")
    w = _Synth()
    w.rec(HEAP_DUMP_END, b"")
    parse_error(w, "without HEAP DUMP SEGMENTs", "END without segments")
    w = _Synth()
    w.rec(0x99, b"abc")
    parse_error(w, "unknown top-level record tag 0x99 at offset 31 (0x1f)", "unknown top-level tag")
    w = _Synth()
    w.rec(LOAD_CLASS, struct.pack(">I", 1) + w.id(1) + struct.pack(">I", 0) + w.id(2) + b"\0")
    parse_error(w, "LOAD CLASS record at offset 31 (0x1f) has length 25, its content is 24", "LOAD CLASS length")
    for tag, text in ((0x42, "unknown heap dump sub-record tag 0x42"), (0x89, "ROOT INTERNED STRING"),
                      (0xFE, "HEAP DUMP INFO"), (0xC3, "PRIMITIVE ARRAY NODATA")):
        w = _Synth()
        w.rec(HEAP_DUMP_SEGMENT, bytes([tag]) + w.id(1) + b"\0" * 8)
        w.rec(HEAP_DUMP_END, b"")
        parse_error(w, text, "sub-record tag 0x%02x" % tag)
    w = _Synth()
    w.rec(HEAP_DUMP_SEGMENT, b"\x23" + w.id(1) + struct.pack(">IIB", 0, 1, 2) + b"\0" * 8)
    w.rec(HEAP_DUMP_END, b"")
    parse_error(w, "element type 2", "object type in PRIM ARRAY DUMP")
    w = _Synth()
    w.rec(HEAP_DUMP_SEGMENT, w.class_dump(0x100, 0, fields=[(3, 1)], isz=8))
    w.rec(HEAP_DUMP_END, b"")
    parse_error(w, "instance field 0 has type code 1", "type code 1 in a CLASS DUMP")
    w = _Synth(id_size=8)
    w.out[19:23] = struct.pack(">I", 5)
    parse_error(w, "identifier size 5", "id size 5")
    parse_error(b"JAVA PROFILE 1.0.3\0" + good[19:], "unknown format 'JAVA PROFILE 1.0.3'", "Android format")

    # --- integrity problems, one kind at a time
    kinds({"next": 0x9999}, "dangling field", ["dangling"])
    kinds({"arr_id": 0x1000}, "duplicate id (and so the root to 0x1020 dangles)", ["duplicate_id", "root_dangling"])
    kinds({"extra": b"\0"}, "instance length", ["instance_length"])
    kinds({"point_isz": 99}, "class instance size", ["instance_size"])
    kinds({"loads": ((1, 0x100, 1), (2, 0x200, 2), (4, 0x400, 5))}, "CLASS DUMP without LOAD CLASS",
          ["class_without_load"])
    kinds({"ts": 77}, "unknown trace serial", ["traces"])
    kinds({"field_name": 99}, "missing UTF8 name", ["names"])
    kinds({"sub_cid": 0x777}, "instance of an undumped class", ["instance_class"])
    kinds({"sub_super": 0x777}, "missing superclass", ["superclass", "instance_class", "dangling"])
    kinds({"sub_super": 0}, "super 0 for another class than java.lang.Object",
          ["super_zero", "instance_size", "instance_length"])
    kinds({"loads": ((1, 0x100, 1), (2, 0x200, 2), (3, 0x300, 7), (4, 0x400, 5), (5, 0x400, 5))},
          "LOAD CLASS repeated", ["load_class_again"])
    d = kinds({"layout": "twice"}, "two heap dumps", [], fmt="JAVA PROFILE 1.0.1")
    if d is not None:
        expect(len(d.heap_dumps) == 2 and d.heap.objects == 2 and d.heap_dumps[0].objects == 4,
               "two heap dumps: the last one is d.heap")
    if fails:
        for f in fails:
            print("FAIL", f)
    print("selftest: %d failures" % len(fails))
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    return len(fails)


# ---------------------------------------------------------------- CLI

def _summary(d, out):
    w = out.write
    w("file: %s (%d bytes)\n" % (d.path, d.file_size))
    w("format: %s, id size %d, timestamp %d ms\n" % (d.format, d.id_size, d.timestamp_ms))
    w("records:\n")
    for name, n in sorted(d.record_counts.items()):
        w("  %-18s %d\n" % (name, n))
    if d.segment_sizes:
        s = d.segment_sizes
        w("segments: %d, body bytes min %d / max %d / total %d\n" % (len(s), min(s), max(s), sum(s)))
    w("strings %d, classes %d (dumped %d), frames %d, traces %d, threads %d\n" % (
        len(d.strings), len(d.classes), sum(1 for c in d.classes.values() if c.dumped),
        len(d.frames), len(d.traces), len(d.threads)))
    for hd in d.heap_dumps:
        w("heap dump #%d at %s%s: %d instances, %d object arrays, %d primitive arrays, "
          "%d class dumps, %d roots\n" % (hd.index, _at(hd.offset), " (segments)" if hd.segmented else "",
                                          hd.instances, hd.obj_arrays, hd.prim_arrays, len(hd.classes),
                                          len(hd.roots)))
        for kind, n in sorted(collections.Counter(k for k, _o, _e in hd.roots).items()):
            w("  roots %-14s %d\n" % (kind, n))


def _histogram(d, out):
    w = out.write
    w("(#bytes: instance field bytes as dumped / array element bytes; no headers)\n")
    w(" num     #instances         #bytes  class name\n")
    w("----------------------------------------------\n")
    tc = tb = 0
    for i, (n, c, b) in enumerate(d.histogram(), 1):
        w("%4d: %14d %14d  %s\n" % (i, c, b, n))
        tc += c
        tb += b
    w("Total %14d %14d\n" % (tc, tb))


def main(argv=None):
    import argparse
    import time
    ap = argparse.ArgumentParser(description="Read and check an HPROF binary file.")
    ap.add_argument("file", nargs="?")
    ap.add_argument("--summary", action="store_true", help="header, record counts, roots by kind")
    ap.add_argument("--histogram", action="store_true", help="instances and bytes per class, like jmap -histo")
    ap.add_argument("--check", action="store_true", help="print integrity problems; exit 1 if any")
    ap.add_argument("--selftest", action="store_true", help="run the reader on synthetic files")
    a = ap.parse_args(argv)
    if a.selftest:
        return 1 if selftest(verbose=True) else 0
    if not a.file:
        ap.error("a FILE is needed")
    t0 = time.time()
    try:
        d = read(a.file)
    except ParseError as e:
        print("ERROR: %s" % e, file=sys.stderr)
        return 2
    dt = time.time() - t0
    if a.summary or not (a.histogram or a.check):
        _summary(d, sys.stdout)
        print("parsed in %.2f s (%.1f MB/s)" % (dt, d.file_size / 1e6 / max(dt, 1e-9)))
    if a.histogram:
        _histogram(d, sys.stdout)
    if a.check:
        for p in d.problems:
            print("PROBLEM [%s]: %s" % (p.kind, p))
        print("%d problems" % len(d.problems))
        return 1 if d.problems else 0
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:         # e.g. --histogram | head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
