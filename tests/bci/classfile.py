"""Class files in Python, for the rewriter tests (tests/bci/).

    parse(bytes) -> ClassFile        constant pool, fields, methods, Code with
                                     decoded instructions, exception table,
                                     LineNumberTable, LocalVariable(Type)Table,
                                     StackMapTable frames; strict bounds checks
    Assembler                        labels, branches, switches with padding,
                                     exception table, StackMapTable from full
                                     frames given at labels (compact encoding
                                     chosen like javac); used by classgen.py

Nothing here knows about the rewriter: bcitests.py compares original and
rewritten classes with it.
"""

import struct

# ------------------------------------------------------------------ opcodes

# (opcode, mnemonic, operand format); formats described in _decode_one.
_OPS = """
0 nop -;1 aconst_null -;2 iconst_m1 -;3 iconst_0 -;4 iconst_1 -;5 iconst_2 -;6 iconst_3 -;7 iconst_4 -;
8 iconst_5 -;9 lconst_0 -;10 lconst_1 -;11 fconst_0 -;12 fconst_1 -;13 fconst_2 -;14 dconst_0 -;15 dconst_1 -;
16 bipush b;17 sipush s;18 ldc c1;19 ldc_w c2;20 ldc2_w c2;21 iload l;22 lload l;23 fload l;24 dload l;25 aload l;
26 iload_0 -;27 iload_1 -;28 iload_2 -;29 iload_3 -;30 lload_0 -;31 lload_1 -;32 lload_2 -;33 lload_3 -;
34 fload_0 -;35 fload_1 -;36 fload_2 -;37 fload_3 -;38 dload_0 -;39 dload_1 -;40 dload_2 -;41 dload_3 -;
42 aload_0 -;43 aload_1 -;44 aload_2 -;45 aload_3 -;46 iaload -;47 laload -;48 faload -;49 daload -;50 aaload -;
51 baload -;52 caload -;53 saload -;54 istore l;55 lstore l;56 fstore l;57 dstore l;58 astore l;
59 istore_0 -;60 istore_1 -;61 istore_2 -;62 istore_3 -;63 lstore_0 -;64 lstore_1 -;65 lstore_2 -;66 lstore_3 -;
67 fstore_0 -;68 fstore_1 -;69 fstore_2 -;70 fstore_3 -;71 dstore_0 -;72 dstore_1 -;73 dstore_2 -;74 dstore_3 -;
75 astore_0 -;76 astore_1 -;77 astore_2 -;78 astore_3 -;79 iastore -;80 lastore -;81 fastore -;82 dastore -;
83 aastore -;84 bastore -;85 castore -;86 sastore -;87 pop -;88 pop2 -;89 dup -;90 dup_x1 -;91 dup_x2 -;
92 dup2 -;93 dup2_x1 -;94 dup2_x2 -;95 swap -;96 iadd -;97 ladd -;98 fadd -;99 dadd -;100 isub -;101 lsub -;
102 fsub -;103 dsub -;104 imul -;105 lmul -;106 fmul -;107 dmul -;108 idiv -;109 ldiv -;110 fdiv -;111 ddiv -;
112 irem -;113 lrem -;114 frem -;115 drem -;116 ineg -;117 lneg -;118 fneg -;119 dneg -;120 ishl -;121 lshl -;
122 ishr -;123 lshr -;124 iushr -;125 lushr -;126 iand -;127 land -;128 ior -;129 lor -;130 ixor -;131 lxor -;
132 iinc iinc;133 i2l -;134 i2f -;135 i2d -;136 l2i -;137 l2f -;138 l2d -;139 f2i -;140 f2l -;141 f2d -;
142 d2i -;143 d2l -;144 d2f -;145 i2b -;146 i2c -;147 i2s -;148 lcmp -;149 fcmpl -;150 fcmpg -;151 dcmpl -;
152 dcmpg -;153 ifeq br2;154 ifne br2;155 iflt br2;156 ifge br2;157 ifgt br2;158 ifle br2;159 if_icmpeq br2;
160 if_icmpne br2;161 if_icmplt br2;162 if_icmpge br2;163 if_icmpgt br2;164 if_icmple br2;165 if_acmpeq br2;
166 if_acmpne br2;167 goto br2;168 jsr br2;169 ret l;170 tableswitch tswitch;171 lookupswitch lswitch;
172 ireturn -;173 lreturn -;174 freturn -;175 dreturn -;176 areturn -;177 return -;178 getstatic c2;
179 putstatic c2;180 getfield c2;181 putfield c2;182 invokevirtual c2;183 invokespecial c2;184 invokestatic c2;
185 invokeinterface iface;186 invokedynamic indy;187 new c2;188 newarray atype;189 anewarray c2;
190 arraylength -;191 athrow -;192 checkcast c2;193 instanceof c2;194 monitorenter -;195 monitorexit -;
196 wide wide;197 multianewarray multi;198 ifnull br2;199 ifnonnull br2;200 goto_w br4;201 jsr_w br4
"""

OPCODES = {}   # mnemonic -> opcode
MNEMONIC = {}  # opcode -> mnemonic
FORMAT = {}    # opcode -> format
for _item in _OPS.replace("\n", "").split(";"):
    _n, _m, _f = _item.split()
    OPCODES[_m] = int(_n)
    MNEMONIC[int(_n)] = _m
    FORMAT[int(_n)] = _f

COND_BRANCHES = {"ifeq", "ifne", "iflt", "ifge", "ifgt", "ifle", "if_icmpeq", "if_icmpne", "if_icmplt",
                 "if_icmpge", "if_icmpgt", "if_icmple", "if_acmpeq", "if_acmpne", "ifnull", "ifnonnull"}
INVERSE = {"ifeq": "ifne", "ifne": "ifeq", "iflt": "ifge", "ifge": "iflt", "ifgt": "ifle", "ifle": "ifgt",
           "if_icmpeq": "if_icmpne", "if_icmpne": "if_icmpeq", "if_icmplt": "if_icmpge",
           "if_icmpge": "if_icmplt", "if_icmpgt": "if_icmple", "if_icmple": "if_icmpgt",
           "if_acmpeq": "if_acmpne", "if_acmpne": "if_acmpeq", "ifnull": "ifnonnull", "ifnonnull": "ifnull"}
RETURNS = {"ireturn", "lreturn", "freturn", "dreturn", "areturn", "return"}
ALLOCS = {"newarray", "anewarray", "multianewarray"}
ATYPES = {4: "boolean", 5: "char", 6: "float", 7: "double", 8: "byte", 9: "short", 10: "int", 11: "long"}
# Instructions after which control does not fall through.
NO_FALLTHROUGH = RETURNS | {"goto", "goto_w", "athrow", "tableswitch", "lookupswitch", "ret"}


class FormatError(Exception):
    pass


# ------------------------------------------------------------------ reading

class Reader:
    def __init__(self, data, pos=0, end=None):
        self.d = data
        self.p = pos
        self.end = len(data) if end is None else end

    def need(self, n):
        if self.p + n > self.end:
            raise FormatError("truncated at %d (need %d, end %d)" % (self.p, n, self.end))

    def u1(self):
        self.need(1)
        v = self.d[self.p]
        self.p += 1
        return v

    def u2(self):
        self.need(2)
        v = struct.unpack_from(">H", self.d, self.p)[0]
        self.p += 2
        return v

    def s2(self):
        self.need(2)
        v = struct.unpack_from(">h", self.d, self.p)[0]
        self.p += 2
        return v

    def u4(self):
        self.need(4)
        v = struct.unpack_from(">I", self.d, self.p)[0]
        self.p += 4
        return v

    def s4(self):
        self.need(4)
        v = struct.unpack_from(">i", self.d, self.p)[0]
        self.p += 4
        return v

    def bytes(self, n):
        self.need(n)
        v = bytes(self.d[self.p:self.p + n])
        self.p += n
        return v


# Constant pool tags
UTF8, INTEGER, FLOAT, LONG, DOUBLE, CLASS, STRING, FIELDREF, METHODREF, IMETHODREF, NAMEANDTYPE = \
    1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
METHODHANDLE, METHODTYPE, DYNAMIC, INVOKEDYNAMIC, MODULE, PACKAGE = 15, 16, 17, 18, 19, 20


class ConstantPool:
    """entries[i] = (tag, value) with value a str (Utf8), number, or tuple of
    indices; entries[0] and the slot after a Long/Double are None."""

    def __init__(self, entries=None, raw=None):
        self.entries = entries or [None]
        self.raw = raw or [None]  # the bytes of each entry as read (tag included)

    def __len__(self):
        return len(self.entries)

    def get(self, i, *tags):
        if not 0 < i < len(self.entries) or self.entries[i] is None:
            raise FormatError("bad constant pool index %d" % i)
        e = self.entries[i]
        if tags and e[0] not in tags:
            raise FormatError("constant pool entry %d has tag %d, expected %s" % (i, e[0], tags))
        return e

    def utf8(self, i):
        return self.get(i, UTF8)[1]

    def class_name(self, i):
        return self.utf8(self.get(i, CLASS)[1][0])

    def name_and_type(self, i):
        _, (n, t) = self.get(i, NAMEANDTYPE)
        return self.utf8(n), self.utf8(t)

    def member(self, i):
        """(class, name, descriptor) of a Field/Method/InterfaceMethodref."""
        tag, (c, nt) = self.get(i, FIELDREF, METHODREF, IMETHODREF)
        return (self.class_name(c),) + self.name_and_type(nt)

    def describe(self, i):
        """A symbolic, index-free rendering of entry i (for comparing code
        across two constant pools)."""
        tag, v = self.get(i)
        if tag == UTF8:
            return "Utf8 %r" % v
        if tag in (INTEGER, FLOAT, LONG, DOUBLE):
            return "%s %r" % ({INTEGER: "int", FLOAT: "float", LONG: "long", DOUBLE: "double"}[tag], v)
        if tag == CLASS:
            return "Class " + self.utf8(v[0])
        if tag == STRING:
            return "String %r" % self.utf8(v[0])
        if tag in (FIELDREF, METHODREF, IMETHODREF):
            return "%s %s.%s:%s" % (({9: "Field", 10: "Method", 11: "IMethod"}[tag],) + tuple(self.member(i)))
        if tag == NAMEANDTYPE:
            return "NameAndType %s:%s" % self.name_and_type(i)
        if tag == METHODHANDLE:
            return "MethodHandle %d %s" % (v[0], self.describe(v[1]))
        if tag == METHODTYPE:
            return "MethodType " + self.utf8(v[0])
        if tag in (DYNAMIC, INVOKEDYNAMIC):
            return "%s #%d %s:%s" % ((("Dynamic" if tag == DYNAMIC else "InvokeDynamic"), v[0]) + self.name_and_type(v[1]))
        if tag in (MODULE, PACKAGE):
            return "%s %s" % ("Module" if tag == MODULE else "Package", self.utf8(v[0]))
        return "tag%d %r" % (tag, v)


def _read_cp(r):
    n = r.u2()
    cp = ConstantPool([None] * n, [None] * n)
    i = 1
    while i < n:
        start = r.p
        tag = r.u1()
        wide = False
        if tag == UTF8:
            ln = r.u2()
            raw = r.bytes(ln)
            try:
                v = _mutf8_decode(raw)
            except Exception as e:
                raise FormatError("bad modified UTF-8 in entry %d: %s" % (i, e))
        elif tag == INTEGER:
            v = struct.unpack(">i", r.bytes(4))[0]
        elif tag == FLOAT:
            v = struct.unpack(">f", r.bytes(4))[0]
        elif tag == LONG:
            v = struct.unpack(">q", r.bytes(8))[0]
            wide = True
        elif tag == DOUBLE:
            v = struct.unpack(">d", r.bytes(8))[0]
            wide = True
        elif tag in (CLASS, STRING, METHODTYPE, MODULE, PACKAGE):
            v = (r.u2(),)
        elif tag in (FIELDREF, METHODREF, IMETHODREF, NAMEANDTYPE, DYNAMIC, INVOKEDYNAMIC):
            v = (r.u2(), r.u2())
        elif tag == METHODHANDLE:
            v = (r.u1(), r.u2())
        else:
            raise FormatError("unknown constant pool tag %d at entry %d" % (tag, i))
        cp.entries[i] = (tag, v)
        cp.raw[i] = bytes(r.d[start:r.p])
        i += 2 if wide else 1
    if i != n:
        raise FormatError("Long/Double in the last constant pool slot")
    return cp


def _mutf8_decode(b):
    out = []
    i = 0
    while i < len(b):
        c = b[i]
        if c < 0x80:
            if c == 0:
                raise ValueError("NUL byte")
            out.append(c)
            i += 1
        elif c & 0xE0 == 0xC0:
            out.append(((c & 0x1F) << 6) | (b[i + 1] & 0x3F))
            i += 2
        elif c & 0xF0 == 0xE0:
            out.append(((c & 0x0F) << 12) | ((b[i + 1] & 0x3F) << 6) | (b[i + 2] & 0x3F))
            i += 3
        else:
            raise ValueError("bad byte 0x%02x" % c)
    # join surrogate pairs
    s = "".join(chr(x) for x in out)
    return s.encode("utf-16", "surrogatepass").decode("utf-16")


def mutf8_encode(s):
    out = bytearray()
    b16 = s.encode("utf-16-be", "surrogatepass")
    units = struct.unpack(">%dH" % (len(b16) // 2), b16)
    for u in units:
        if 0 < u < 0x80:
            out.append(u)
        elif u < 0x800:
            out += bytes([0xC0 | (u >> 6), 0x80 | (u & 0x3F)])
        else:
            out += bytes([0xE0 | (u >> 12), 0x80 | ((u >> 6) & 0x3F), 0x80 | (u & 0x3F)])
    return bytes(out)


class Attribute:
    def __init__(self, name, data, offset=None):
        self.name = name
        self.data = data
        self.offset = offset   # of data, in the buffer it was read from (class file or Code data)


class Insn:
    """One decoded instruction. operand: int (local, constant index, atype,
    bipush/sipush value), tuple for iinc (local, delta), multianewarray
    (index, dims), invokeinterface (index, count); target: absolute branch
    target; targets: switch (default, {key: target}) or tableswitch (default,
    low, high, [targets])."""
    __slots__ = ("pc", "op", "name", "length", "operand", "target", "switch", "wide", "pad")

    def __init__(self, pc, op):
        self.pc = pc
        self.op = op
        self.name = MNEMONIC[op]
        self.length = 1
        self.operand = None
        self.target = None
        self.switch = None
        self.wide = False
        self.pad = b""

    def __repr__(self):
        s = "%d: %s" % (self.pc, self.name)
        if self.operand is not None:
            s += " %r" % (self.operand,)
        if self.target is not None:
            s += " ->%d" % self.target
        if self.switch is not None:
            s += " %r" % (self.switch,)
        return s


def decode(code):
    """Decode a code array into a list of Insn (strict)."""
    out = []
    pc = 0
    n = len(code)
    while pc < n:
        ins = _decode_one(code, pc)
        out.append(ins)
        pc += ins.length
    if pc != n:
        raise FormatError("last instruction runs past the end of the code")
    return out


def _decode_one(code, pc):
    op = code[pc]
    if op not in MNEMONIC:
        raise FormatError("bad opcode %d at %d" % (op, pc))
    ins = Insn(pc, op)
    f = FORMAT[op]
    r = Reader(code, pc + 1)
    if f == "-":
        pass
    elif f == "b":
        ins.operand = struct.unpack(">b", r.bytes(1))[0]
    elif f == "s":
        ins.operand = r.s2()
    elif f in ("l", "c1", "atype"):
        ins.operand = r.u1()
    elif f == "c2":
        ins.operand = r.u2()
    elif f == "iinc":
        ins.operand = (r.u1(), struct.unpack(">b", r.bytes(1))[0])
    elif f == "br2":
        ins.target = pc + r.s2()
    elif f == "br4":
        ins.target = pc + r.s4()
    elif f == "iface":
        ins.operand = (r.u2(), r.u1())
        if r.u1() != 0:
            raise FormatError("invokeinterface fourth byte not zero at %d" % pc)
    elif f == "indy":
        ins.operand = r.u2()
        if r.u2() != 0:
            raise FormatError("invokedynamic bytes 3-4 not zero at %d" % pc)
    elif f == "multi":
        ins.operand = (r.u2(), r.u1())
    elif f in ("tswitch", "lswitch"):
        padn = (4 - (pc + 1) % 4) % 4
        ins.pad = r.bytes(padn)
        default = pc + r.s4()
        if f == "tswitch":
            low, high = r.s4(), r.s4()
            if low > high:
                raise FormatError("tableswitch low > high at %d" % pc)
            if high - low + 1 > 65536:
                raise FormatError("tableswitch too large at %d" % pc)
            ins.switch = (default, low, high, [pc + r.s4() for _ in range(high - low + 1)])
        else:
            npairs = r.s4()
            if npairs < 0 or npairs > 65536:
                raise FormatError("bad lookupswitch npairs at %d" % pc)
            pairs = []
            for _ in range(npairs):
                k = r.s4()
                pairs.append((k, pc + r.s4()))
            ins.switch = (default, pairs)
    elif f == "wide":
        op2 = r.u1()
        name2 = MNEMONIC.get(op2)
        if name2 not in ("iload", "lload", "fload", "dload", "aload", "istore", "lstore", "fstore", "dstore",
                         "astore", "ret", "iinc"):
            raise FormatError("bad wide opcode %d at %d" % (op2, pc))
        ins.op = op2
        ins.name = name2
        ins.wide = True
        ins.operand = (r.u2(), r.s2()) if name2 == "iinc" else r.u2()
    else:
        raise AssertionError(f)
    ins.length = r.p - pc
    return ins


def branch_targets(ins):
    if ins.target is not None:
        return [ins.target]
    if ins.switch is not None:
        if len(ins.switch) == 4:
            return [ins.switch[0]] + list(ins.switch[3])
        return [ins.switch[0]] + [t for _, t in ins.switch[1]]
    return []


# Verification types in StackMapTable frames: ("top",), ("int",), ("float",),
# ("double",), ("long",), ("null",), ("uninitThis",), ("object", "java/lang/String"),
# ("uninit", offset_of_new)
_VT_NAMES = ["top", "int", "float", "double", "long", "null", "uninitThis"]


def _read_vt(r, cp):
    t = r.u1()
    if t < 7:
        return (_VT_NAMES[t],)
    if t == 7:
        return ("object", cp.class_name(r.u2()))
    if t == 8:
        return ("uninit", r.u2())
    raise FormatError("bad verification type tag %d" % t)


class Frame:
    """A decoded StackMapTable entry: kind (the frame_type class), offset
    (absolute), locals and stack as complete lists (expanded from the
    previous frame)."""

    def __init__(self, kind, frame_type, offset, locals_, stack):
        self.kind = kind
        self.frame_type = frame_type
        self.offset = offset
        self.locals = locals_
        self.stack = stack

    def __repr__(self):
        return "Frame(%s@%d L=%r S=%r)" % (self.kind, self.offset, self.locals, self.stack)


def parse_stackmap(data, cp, initial_locals):
    r = Reader(data)
    n = r.u2()
    frames = []
    locals_ = list(initial_locals)
    prev = -1
    for _ in range(n):
        ft = r.u1()
        if ft <= 63:
            kind, delta, stack = "same", ft, []
        elif ft <= 127:
            kind, delta, stack = "same_locals_1_stack_item", ft - 64, [_read_vt(r, cp)]
        elif ft < 247:
            raise FormatError("reserved frame type %d" % ft)
        elif ft == 247:
            kind, delta = "same_locals_1_stack_item_extended", r.u2()
            stack = [_read_vt(r, cp)]
        elif ft <= 250:
            kind, delta, stack = "chop", r.u2(), []
            k = 251 - ft
            if k > len(locals_):
                raise FormatError("chop %d with %d locals" % (k, len(locals_)))
            locals_ = locals_[:len(locals_) - k]
        elif ft == 251:
            kind, delta, stack = "same_extended", r.u2(), []
        elif ft <= 254:
            kind, delta, stack = "append", r.u2(), []
            locals_ = locals_ + [_read_vt(r, cp) for _ in range(ft - 251)]
        else:
            kind, delta = "full", r.u2()
            locals_ = [_read_vt(r, cp) for _ in range(r.u2())]
            stack = [_read_vt(r, cp) for _ in range(r.u2())]
        off = prev + delta + 1
        frames.append(Frame(kind, ft, off, list(locals_), stack))
        prev = off
    if r.p != len(data):
        raise FormatError("StackMapTable has %d trailing bytes" % (len(data) - r.p))
    return frames


def initial_frame_locals(class_name, method_name, descriptor, access):
    out = []
    if not access & 0x0008:
        if method_name == "<init>" and class_name != "java/lang/Object":
            out.append(("uninitThis",))
        else:
            out.append(("object", class_name))
    for t in parse_method_desc(descriptor)[0]:
        if t in ("I", "Z", "B", "C", "S"):
            out.append(("int",))
        elif t == "F":
            out.append(("float",))
        elif t == "J":
            out.append(("long",))
        elif t == "D":
            out.append(("double",))
        elif t.startswith("["):
            out.append(("object", t))
        else:
            out.append(("object", t[1:-1]))
    return out


def parse_method_desc(desc):
    if not desc.startswith("("):
        raise FormatError("bad method descriptor %r" % desc)
    i = 1
    args = []
    while desc[i] != ")":
        j = i
        while desc[j] == "[":
            j += 1
        if desc[j] == "L":
            j = desc.index(";", j)
        args.append(desc[i:j + 1])
        i = j + 1
    return args, desc[i + 1:]


def arg_slots(desc, static):
    n = 0 if static else 1
    for a in parse_method_desc(desc)[0]:
        n += 2 if a in ("J", "D") else 1
    return n


class Code:
    def __init__(self):
        self.max_stack = self.max_locals = 0
        self.code = b""
        self.exceptions = []     # (start, end, handler, catch_type cp index)
        self.attributes = []     # Attribute
        self.insns = None
        self.line_numbers = None         # [(pc, line)]
        self.local_vars = None           # [(start, length, name, desc, index)]
        self.local_var_types = None
        self.frames = None               # [Frame]
        self.base = None                 # file offset of the attribute data; code at base + 8

    def attr(self, name):
        for a in self.attributes:
            if a.name == name:
                return a
        return None


class Member:
    def __init__(self, access, name, desc, attributes):
        self.access = access
        self.name = name
        self.desc = desc
        self.attributes = attributes
        self.code = None

    def attr(self, name):
        for a in self.attributes:
            if a.name == name:
                return a
        return None


class ClassFile:
    def __init__(self):
        self.minor = self.major = 0
        self.cp = ConstantPool()
        self.access = 0
        self.this_class = self.super_class = 0
        self.interfaces = []
        self.fields = []
        self.methods = []
        self.attributes = []

    @property
    def name(self):
        return self.cp.class_name(self.this_class)

    def method(self, name, desc=None):
        for m in self.methods:
            if m.name == name and (desc is None or m.desc == desc):
                return m
        return None


def _read_attrs(r, cp):
    out = []
    for _ in range(r.u2()):
        name = cp.utf8(r.u2())
        ln = r.u4()
        off = r.p
        out.append(Attribute(name, r.bytes(ln), off))
    return out


def parse(data, decode_code=True):
    r = Reader(data)
    if r.u4() != 0xCAFEBABE:
        raise FormatError("bad magic")
    cf = ClassFile()
    cf.minor, cf.major = r.u2(), r.u2()
    cf.cp = _read_cp(r)
    cf.access, cf.this_class, cf.super_class = r.u2(), r.u2(), r.u2()
    cf.interfaces = [r.u2() for _ in range(r.u2())]
    for lst in (cf.fields, cf.methods):
        for _ in range(r.u2()):
            acc, n, d = r.u2(), r.u2(), r.u2()
            lst.append(Member(acc, cf.cp.utf8(n), cf.cp.utf8(d), _read_attrs(r, cf.cp)))
    cf.attributes = _read_attrs(r, cf.cp)
    if r.p != len(data):
        raise FormatError("%d trailing bytes after the class" % (len(data) - r.p))
    cls = cf.name
    for m in cf.methods:
        a = m.attr("Code")
        if a is None:
            continue
        m.code = parse_code(a.data, cf.cp, cls, m, decode_code)
        m.code.base = a.offset   # file offset of the Code attribute's data (max_stack)
    return cf


def parse_code(data, cp, cls, m, decode_code=True):
    r = Reader(data)
    c = Code()
    c.max_stack, c.max_locals = r.u2(), r.u2()
    ln = r.u4()
    c.code = r.bytes(ln)
    for _ in range(r.u2()):
        c.exceptions.append((r.u2(), r.u2(), r.u2(), r.u2()))
    c.attributes = _read_attrs(r, cp)
    if r.p != len(data):
        raise FormatError("Code attribute of %s%s has trailing bytes" % (m.name, m.desc))
    if not decode_code:
        return c
    c.insns = decode(c.code)
    for a in c.attributes:
        ar = Reader(a.data)
        if a.name == "LineNumberTable":
            c.line_numbers = (c.line_numbers or []) + [(ar.u2(), ar.u2()) for _ in range(ar.u2())]
        elif a.name in ("LocalVariableTable", "LocalVariableTypeTable"):
            ents = [(ar.u2(), ar.u2(), cp.utf8(ar.u2()), cp.utf8(ar.u2()), ar.u2()) for _ in range(ar.u2())]
            if a.name == "LocalVariableTable":
                c.local_vars = (c.local_vars or []) + ents
            else:
                c.local_var_types = (c.local_var_types or []) + ents
        elif a.name == "StackMapTable":
            c.frames = parse_stackmap(a.data, cp, initial_frame_locals(cls, m.name, m.desc, m.access))
    return c


# ------------------------------------------------------------------ writing

class Writer:
    def __init__(self):
        self.b = bytearray()

    def u1(self, v):
        self.b += struct.pack(">B", v)

    def u2(self, v):
        self.b += struct.pack(">H", v)

    def s2(self, v):
        self.b += struct.pack(">h", v)

    def u4(self, v):
        self.b += struct.pack(">I", v)

    def s4(self, v):
        self.b += struct.pack(">i", v)

    def raw(self, v):
        self.b += v


def write_attrs(w, cp_builder, attrs):
    w.u2(len(attrs))
    for a in attrs:
        w.u2(cp_builder.utf8(a.name))
        w.u4(len(a.data))
        w.raw(a.data)


# ------------------------------------------------------------------ building

class CPBuilder:
    """A constant pool under construction (deduplicating)."""

    def __init__(self):
        self.items = [None]
        self.index = {}

    def _add(self, key, raw, wide=False):
        if key in self.index:
            return self.index[key]
        i = len(self.items)
        self.items.append(raw)
        if wide:
            self.items.append(None)
        self.index[key] = i
        return i

    def utf8(self, s):
        b = mutf8_encode(s)
        return self._add(("utf8", s), struct.pack(">BH", UTF8, len(b)) + b)

    def klass(self, name):
        return self._add(("class", name), struct.pack(">BH", CLASS, self.utf8(name)))

    def string(self, s):
        return self._add(("string", s), struct.pack(">BH", STRING, self.utf8(s)))

    def integer(self, v):
        return self._add(("int", v), struct.pack(">Bi", INTEGER, v))

    def float_(self, v):
        return self._add(("float", struct.pack(">f", v)), struct.pack(">Bf", FLOAT, v))

    def long_(self, v):
        return self._add(("long", v), struct.pack(">Bq", LONG, v), wide=True)

    def double(self, v):
        return self._add(("double", struct.pack(">d", v)), struct.pack(">Bd", DOUBLE, v), wide=True)

    def name_and_type(self, n, d):
        return self._add(("nt", n, d), struct.pack(">BHH", NAMEANDTYPE, self.utf8(n), self.utf8(d)))

    def _ref(self, tag, c, n, d):
        return self._add((tag, c, n, d), struct.pack(">BHH", tag, self.klass(c), self.name_and_type(n, d)))

    def field(self, c, n, d):
        return self._ref(FIELDREF, c, n, d)

    def method(self, c, n, d):
        return self._ref(METHODREF, c, n, d)

    def imethod(self, c, n, d):
        return self._ref(IMETHODREF, c, n, d)

    def write(self, w):
        w.u2(len(self.items))
        for it in self.items[1:]:
            if it is not None:
                w.raw(it)


class Label:
    def __init__(self, name):
        self.name = name
        self.pc = None

    def __repr__(self):
        return "Label(%s@%s)" % (self.name, self.pc)


class Assembler:
    """A method body. Emit with op(name, *operands); branches take a Label;
    tableswitch(default, low, [labels]) and lookupswitch(default, {key: label});
    place(label); frame(label, locals, stack) records a StackMapTable frame
    (types as in Frame, ("uninit", label) allowed); handler(start, end, handler,
    class or None); line(label, n) for the LineNumberTable.  Branch offsets
    must fit their encoding (no automatic widening: this is for exact,
    hand-made byte code)."""

    def __init__(self, cp):
        self.cp = cp
        self.items = []       # ("insn", name, operands) | ("label", Label)
        self.labels = {}
        self.frames = []      # (Label, locals, stack)
        self.handlers = []
        self.lines = []
        self.local_vars = []  # (start label, end label, name, desc, index)

    def label(self, name):
        if name not in self.labels:
            self.labels[name] = Label(name)
        return self.labels[name]

    def L(self, name):
        return self.label(name)

    def place(self, name):
        lab = self.label(name)
        self.items.append(("label", lab))
        return lab

    def op(self, name, *operands):
        if name not in OPCODES and name not in ("wide_iinc", "wide_load_store"):
            raise ValueError("unknown opcode " + name)
        ops = tuple(self.label(o) if isinstance(o, str) and name in COND_BRANCHES | {"goto", "goto_w", "jsr", "jsr_w"}
                    else o for o in operands)
        self.items.append(("insn", name, ops))
        return self

    def tableswitch(self, default, low, targets):
        self.items.append(("insn", "tableswitch", (self.label(default), low, [self.label(t) for t in targets])))

    def lookupswitch(self, default, pairs):
        self.items.append(("insn", "lookupswitch", (self.label(default),
                                                    sorted((k, self.label(t)) for k, t in pairs.items()))))

    def frame(self, label, locals_, stack=()):
        self.frames.append((self.label(label), list(locals_), list(stack)))

    def handler(self, start, end, handler, cls=None):
        self.handlers.append((self.label(start), self.label(end), self.label(handler), cls))

    def line(self, label, n):
        self.lines.append((self.label(label), n))

    def local_var(self, start, end, name, desc, index):
        self.local_vars.append((self.label(start), self.label(end), name, desc, index))

    def _size(self, name, ops, pc):
        f = FORMAT.get(OPCODES.get(name))
        if name == "wide_iinc":
            return 6
        if name == "wide_load_store":
            return 4
        if name in ("tableswitch", "lookupswitch"):
            pad = (4 - (pc + 1) % 4) % 4
            if name == "tableswitch":
                return 1 + pad + 12 + 4 * len(ops[2])
            return 1 + pad + 8 + 8 * len(ops[1])
        return {"-": 1, "b": 2, "s": 3, "l": 2, "c1": 2, "c2": 3, "atype": 2, "iinc": 3, "br2": 3, "br4": 5,
                "iface": 5, "indy": 5, "multi": 4}[f]

    def assemble(self):
        # Sizes depend only on positions (switch padding): iterate to a fixpoint.
        for _ in range(10):
            pc = 0
            changed = False
            for it in self.items:
                if it[0] == "label":
                    if it[1].pc != pc:
                        changed = True
                    it[1].pc = pc
                else:
                    pc += self._size(it[1], it[2], pc)
            if not changed:
                break
        self.code_length = pc
        w = Writer()
        for it in self.items:
            if it[0] == "label":
                continue
            name, ops = it[1], it[2]
            pc = len(w.b)
            if name == "wide_iinc":
                w.u1(196), w.u1(132), w.u2(ops[0]), w.s2(ops[1])
                continue
            if name == "wide_load_store":
                w.u1(196), w.u1(OPCODES[ops[0]]), w.u2(ops[1])
                continue
            op = OPCODES[name]
            f = FORMAT[op]
            w.u1(op)
            if f == "-":
                pass
            elif f == "b":
                w.b += struct.pack(">b", ops[0])
            elif f == "s":
                w.s2(ops[0])
            elif f in ("l", "c1", "atype"):
                if not 0 <= ops[0] <= 255:
                    raise ValueError("%s operand %r does not fit u1" % (name, ops[0]))
                w.u1(ops[0])
            elif f == "c2":
                w.u2(ops[0])
            elif f == "iinc":
                w.u1(ops[0])
                w.b += struct.pack(">b", ops[1])
            elif f == "br2":
                off = ops[0].pc - pc
                if not -32768 <= off <= 32767:
                    raise ValueError("%s offset %d does not fit" % (name, off))
                w.s2(off)
            elif f == "br4":
                w.s4(ops[0].pc - pc)
            elif f == "iface":
                w.u2(ops[0]), w.u1(ops[1]), w.u1(0)
            elif f == "indy":
                w.u2(ops[0]), w.u2(0)
            elif f == "multi":
                w.u2(ops[0]), w.u1(ops[1])
            elif f in ("tswitch", "lswitch"):
                w.raw(b"\0" * ((4 - (pc + 1) % 4) % 4))
                w.s4(ops[0].pc - pc)
                if f == "tswitch":
                    low, targets = ops[1], ops[2]
                    w.s4(low), w.s4(low + len(targets) - 1)
                    for t in targets:
                        w.s4(t.pc - pc)
                else:
                    w.s4(len(ops[1]))
                    for k, t in ops[1]:
                        w.s4(k), w.s4(t.pc - pc)
            else:
                raise AssertionError(f)
        assert len(w.b) == self.code_length, (len(w.b), self.code_length)
        return bytes(w.b)

    def _vt(self, w, t):
        if t[0] in _VT_NAMES:
            w.u1(_VT_NAMES.index(t[0]))
        elif t[0] == "object":
            w.u1(7), w.u2(self.cp.klass(t[1]))
        elif t[0] == "uninit":
            w.u1(8), w.u2(self.label(t[1]).pc if isinstance(t[1], str) else t[1])
        else:
            raise ValueError(t)

    def stackmap(self, initial_locals, force_full=False):
        """Encode the frames like javac: the most compact frame type that
        expresses each frame relative to the previous one."""
        frames = sorted(self.frames, key=lambda f: f[0].pc)
        w = Writer()
        w.u2(len(frames))
        prev_locals = list(initial_locals)
        prev = -1
        for lab, loc, stack in frames:
            delta = lab.pc - prev - 1
            if delta < 0:
                raise ValueError("two frames at %d" % lab.pc)
            same_locals = loc == prev_locals
            if not force_full and same_locals and not stack:
                if delta <= 63:
                    w.u1(delta)
                else:
                    w.u1(251), w.u2(delta)
            elif not force_full and same_locals and len(stack) == 1:
                if delta <= 63:
                    w.u1(64 + delta)
                else:
                    w.u1(247), w.u2(delta)
                self._vt(w, stack[0])
            elif (not force_full and not stack and len(loc) < len(prev_locals)
                  and len(prev_locals) - len(loc) <= 3 and prev_locals[:len(loc)] == loc):
                w.u1(251 - (len(prev_locals) - len(loc))), w.u2(delta)
            elif (not force_full and not stack and len(loc) > len(prev_locals)
                  and len(loc) - len(prev_locals) <= 3 and loc[:len(prev_locals)] == prev_locals):
                w.u1(251 + len(loc) - len(prev_locals)), w.u2(delta)
                for t in loc[len(prev_locals):]:
                    self._vt(w, t)
            else:
                w.u1(255), w.u2(delta), w.u2(len(loc))
                for t in loc:
                    self._vt(w, t)
                w.u2(len(stack))
                for t in stack:
                    self._vt(w, t)
            prev_locals = loc
            prev = lab.pc
        return bytes(w.b)


def build_class(major, minor, name, super_name, methods, access=0x0021, fields=(), source=None, cp=None,
                interfaces=(), cp_pad_to=None):
    """methods: list of dicts {access, name, desc, asm (Assembler) or None,
    max_stack, max_locals, stackmap (bool), force_full_frames}.  fields:
    [(access, name, desc)].  cp_pad_to: fill the constant pool with unused
    Utf8 entries up to this constant_pool_count.  Returns the class bytes."""
    cp = cp or CPBuilder()
    this_i = cp.klass(name)
    super_i = cp.klass(super_name) if super_name else 0
    iface_i = [cp.klass(i) for i in interfaces]
    mbytes = []
    for m in methods:
        attrs = []
        asm = m.get("asm")
        if asm is not None:
            code = asm.assemble()
            cattrs = []
            if m.get("stackmap") and asm.frames:
                init = initial_frame_locals(name, m["name"], m["desc"], m["access"])
                cattrs.append(Attribute("StackMapTable", asm.stackmap(init, m.get("force_full_frames", False))))
            if asm.lines:
                lw = Writer()
                lw.u2(len(asm.lines))
                for lab, n in asm.lines:
                    lw.u2(lab.pc), lw.u2(n)
                cattrs.append(Attribute("LineNumberTable", bytes(lw.b)))
            if asm.local_vars:
                lw = Writer()
                lw.u2(len(asm.local_vars))
                for s, e, n, d, i in asm.local_vars:
                    lw.u2(s.pc), lw.u2(e.pc - s.pc), lw.u2(cp.utf8(n)), lw.u2(cp.utf8(d)), lw.u2(i)
                cattrs.append(Attribute("LocalVariableTable", bytes(lw.b)))
            cw = Writer()
            cw.u2(m["max_stack"]), cw.u2(m["max_locals"]), cw.u4(len(code)), cw.raw(code)
            cw.u2(len(asm.handlers))
            for s, e, h, c in asm.handlers:
                cw.u2(s.pc), cw.u2(e.pc), cw.u2(h.pc), cw.u2(cp.klass(c) if c else 0)
            write_attrs(cw, cp, cattrs)
            attrs.append(Attribute("Code", bytes(cw.b)))
        mbytes.append((m["access"], cp.utf8(m["name"]), cp.utf8(m["desc"]), attrs))
    fbytes = [(a, cp.utf8(n), cp.utf8(d)) for a, n, d in fields]
    cattrs = []
    if source:
        sw = Writer()
        sw.u2(cp.utf8(source))
        cattrs.append(Attribute("SourceFile", bytes(sw.b)))
    # All constants exist now: write.
    body = Writer()
    body.u2(access), body.u2(this_i), body.u2(super_i)
    body.u2(len(iface_i))
    for i in iface_i:
        body.u2(i)
    body.u2(len(fbytes))
    for a, n, d in fbytes:
        body.u2(a), body.u2(n), body.u2(d), body.u2(0)
    body.u2(len(mbytes))
    for a, n, d, attrs in mbytes:
        body.u2(a), body.u2(n), body.u2(d)
        write_attrs(body, cp, attrs)
    write_attrs(body, cp, cattrs)
    k = 0
    while cp_pad_to and len(cp.items) < cp_pad_to:
        cp.utf8("unused constant %d" % k)
        k += 1
    w = Writer()
    w.u4(0xCAFEBABE), w.u2(minor), w.u2(major)
    cp.write(w)
    w.raw(bytes(body.b))
    return bytes(w.b)
