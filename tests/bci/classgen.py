#!/usr/bin/env python3
"""Hand-made class files for the rewriter tests (tests/bci/), written with the
assembler in classfile.py.

    classgen.py OUTDIR       writes OUTDIR/<group>/<package>/<Class>.class and
                             OUTDIR/manifest.txt: one line per runnable class,
                             "<group> <class name> <major>.<minor> <flags>"

Groups (each a class directory of its own):

  old     The same program at class-file versions 45.3, 46.0, 48.0, 49.0
          (finally through jsr/ret, no StackMapTable), 50.0 with a
          StackMapTable, 50.0 without one, 50.0 with jsr (both verified by
          the old inference verifier after the type checker fails over),
          and 51.0.  main branches, loops, calls static and instance
          methods, recurses, throws and catches, switches, allocates arrays
          of all three kinds, computes with longs, and runs a constructor
          that throws before super() and one that throws after it.
  edge    50.0 and 51.0 classes with edge cases: a branch to offset 0 and a
          StackMapTable frame at offset 0 (twice: a loop head and a method
          whose last instruction is a goto), an exception handler covering
          the whole method including itself (end_pc = code_length), frames
          whose offset_delta is exactly 63 (same_frame and
          same_locals_1_stack_item that must become the _extended forms when
          code is inserted), Uninitialized(offset) stack entries after an
          allocation, dead code with a frame, 300 local slots (wide
          instructions, a full_frame with 300 locals), lookupswitch with no
          pairs, tableswitch with negative keys, a returning instruction
          that is both a branch target and an exception range end, a
          handler that is a bare athrow, two handlers on one range (order
          matters), a constructor whose super() call is inside a try range
          (handler ends in athrow), goto_w in the input, a branch to the next
          instruction, a method that always throws.
  far     51.0 classes with branches whose spans are exactly 32767-d
          (forward) or -32768+d (backward), d = 0..8, each with array
          allocations (and returns) inside the span so that insertion crosses
          the limit for small d: forward if, backward if, forward goto,
          backward goto.  Plus, at 49.0, jsr spanning +32767-d and -32768+d
          (jsr -> jsr_w).
  overflow 52.0 classes that cannot be rewritten: a method of exactly 65535
          bytes (any insertion overflows) and a constant pool of 65535
          entries (nothing can be appended); hprof-bci must report each and
          copy it unchanged.
  many    52.0 classes with 34,000 methods in all: method ids above 32767
          (ldc/ldc_w of an Integer constant).

Every class is valid and runs with `java -Xverify:all` before rewriting;
bcitests.py checks that too.
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import classfile as C  # noqa: E402

INT, LONG, TOP = ("int",), ("long",), ("top",)
STATIC, PUBLIC, SUPER = 0x0008, 0x0001, 0x0020
OUT = ("java/io/PrintStream", "Ljava/io/PrintStream;")


def obj(c):
    return ("object", c)


class Cls:
    """A class under construction."""

    def __init__(self, name, major, minor=0, stackmap=True, super_name="java/lang/Object"):
        self.name = name
        self.major, self.minor = major, minor
        self.stackmap = stackmap
        self.super_name = super_name
        self.cp = C.CPBuilder()
        self.methods = []

    def method(self, name, desc, access=STATIC | PUBLIC, max_stack=6, max_locals=None, force_full=False):
        a = C.Assembler(self.cp)
        a.cls = self
        if max_locals is None:
            max_locals = C.arg_slots(desc, access & STATIC)
        self.methods.append({"access": access, "name": name, "desc": desc, "asm": a, "max_stack": max_stack,
                             "max_locals": max_locals, "stackmap": self.stackmap,
                             "force_full_frames": force_full})
        return a

    def default_init(self):
        a = self.method("<init>", "()V", access=PUBLIC, max_stack=1)
        a.op("aload_0").op("invokespecial", self.cp.method(self.super_name, "<init>", "()V")).op("return")

    def bytes(self):
        return C.build_class(self.major, self.minor, self.name, self.super_name, self.methods,
                             access=PUBLIC | SUPER, source=self.name.split("/")[-1] + ".j", cp=self.cp,
                             cp_pad_to=getattr(self, "cp_pad_to", None))


# ------------------------------------------------------------ code helpers

def push_int(a, v):
    if -1 <= v <= 5:
        a.op("iconst_m1" if v == -1 else "iconst_%d" % v)
    elif -128 <= v <= 127:
        a.op("bipush", v)
    elif -32768 <= v <= 32767:
        a.op("sipush", v)
    else:
        a.op("ldc_w", a.cp.integer(v))


def println_str(a, s):
    a.op("getstatic", a.cp.field("java/lang/System", "out", OUT[1]))
    a.op("ldc_w", a.cp.string(s))
    a.op("invokevirtual", a.cp.method(OUT[0], "println", "(Ljava/lang/String;)V"))


def print_call(a, cls, name, desc, *args):
    """System.out.println(cls.name(args)) for an (I)I / (J)J / (I)V... static method."""
    a.op("getstatic", a.cp.field("java/lang/System", "out", OUT[1]))
    for v in args:
        if isinstance(v, tuple) and v[0] == "long":
            a.op("ldc2_w", a.cp.long_(v[1]))
        else:
            push_int(a, v)
    a.op("invokestatic", a.cp.method(cls, name, desc))
    ret = C.parse_method_desc(desc)[1]
    a.op("invokevirtual", a.cp.method(OUT[0], "println", "(%s)V" % ("I" if ret in "ZBCSI" else ret)))


def throw_new(a, exc, msg=None):
    a.op("new", a.cp.klass(exc)).op("dup")
    if msg is None:
        a.op("invokespecial", a.cp.method(exc, "<init>", "()V"))
    else:
        a.op("ldc_w", a.cp.string(msg))
        a.op("invokespecial", a.cp.method(exc, "<init>", "(Ljava/lang/String;)V"))
    a.op("athrow")


def fill(a, nbytes, var=0):
    """Exactly nbytes of straight code: iinc var,k (3 bytes) and nops."""
    k = 1
    while nbytes >= 3:
        a.op("iinc", var, k)
        k = k % 50 + 1
        nbytes -= 3
    for _ in range(nbytes):
        a.op("nop")


# ------------------------------------------------------------ the old-version program

def old_program(name, major, minor, use_jsr, stackmap):
    c = Cls(name, major, minor, stackmap=stackmap)
    cp = c.cp
    c.default_init()

    a = c.method("add", "(II)I", access=PUBLIC, max_stack=2)
    a.op("iload_1").op("iload_2").op("iadd").op("ireturn")

    # loop(n): sum of i*i, xor-ed with i when i % 3 == 0
    a = c.method("loop", "(I)I", max_stack=3, max_locals=3)
    a.op("iconst_0").op("istore_1").op("iconst_0").op("istore_2")
    a.place("cond")
    a.frame("cond", [INT, INT, INT])
    a.op("iload_2").op("iload_0").op("if_icmpge", "end")
    a.op("iload_1").op("iload_2").op("iload_2").op("imul").op("iadd").op("istore_1")
    a.op("iload_2").op("iconst_3").op("irem").op("ifne", "skip")
    a.op("iload_1").op("iload_2").op("ixor").op("istore_1")
    a.place("skip")
    a.frame("skip", [INT, INT, INT])
    a.op("iinc", 2, 1).op("goto", "cond")
    a.place("end")
    a.frame("end", [INT, INT, INT])
    a.op("iload_1").op("ireturn")

    a = c.method("fact", "(I)I", max_stack=3)
    a.op("iload_0").op("iconst_1").op("if_icmpgt", "rec").op("iconst_1").op("ireturn")
    a.place("rec")
    a.frame("rec", [INT])
    a.op("iload_0").op("iload_0").op("iconst_1").op("isub").op("invokestatic", cp.method(name, "fact", "(I)I"))
    a.op("imul").op("ireturn")

    a = c.method("thrower", "(I)V", max_stack=3)
    throw_new(a, "java/lang/IllegalStateException", "boom")

    a = c.method("catcher", "(I)I", max_stack=2, max_locals=2)
    a.place("s")
    a.op("iload_0").op("invokestatic", cp.method(name, "thrower", "(I)V")).op("iconst_0").op("ireturn")
    a.place("h")
    a.frame("h", [INT], [obj("java/lang/RuntimeException")])
    a.op("astore_1").op("aload_1").op("invokevirtual", cp.method("java/lang/Throwable", "getMessage", "()Ljava/lang/String;"))
    a.op("invokevirtual", cp.method("java/lang/String", "length", "()I")).op("iload_0").op("iadd").op("ireturn")
    a.handler("s", "h", "h", "java/lang/RuntimeException")

    a = c.method("sw", "(I)I", max_stack=1)
    a.op("iload_0")
    a.tableswitch("d", 0, ["c0", "c1", "c2", "c3"])
    for i in range(4):
        a.place("c%d" % i)
        a.frame("c%d" % i, [INT])
        a.op("bipush", 10 + i).op("ireturn")
    a.place("d")
    a.frame("d", [INT])
    a.op("iconst_m1").op("ireturn")

    a = c.method("lsw", "(I)I", max_stack=1)
    a.op("iload_0")
    a.lookupswitch("d", {1: "a", 5: "b", 1000: "c"})
    for i, lab in enumerate("abc"):
        a.place(lab)
        a.frame(lab, [INT])
        a.op("bipush", 20 + i).op("ireturn")
    a.place("d")
    a.frame("d", [INT])
    a.op("iconst_m1").op("ireturn")

    a = c.method("arrays", "(I)I", max_stack=3, max_locals=4)
    a.op("iload_0").op("newarray", 10).op("astore_1")
    a.op("iload_0").op("anewarray", cp.klass("java/lang/String")).op("astore_2")
    a.op("iconst_2").op("iload_0").op("multianewarray", cp.klass("[[I"), 2).op("astore_3")
    a.op("aload_1").op("arraylength").op("aload_2").op("arraylength").op("iadd")
    a.op("aload_3").op("arraylength").op("iadd").op("aload_3").op("iconst_1").op("aaload").op("arraylength")
    a.op("iadd").op("ireturn")

    a = c.method("longs", "(J)J", max_stack=4, max_locals=4)
    a.op("lload_0").op("ldc2_w", cp.long_(3)).op("lmul").op("lstore_2")
    a.op("lload_2").op("lload_0").op("lcmp").op("ifle", "neg")
    a.op("lload_2").op("lconst_1").op("ladd").op("lreturn")
    a.place("neg")
    a.frame("neg", [LONG, LONG])
    a.op("lload_2").op("lneg").op("lreturn")

    # fin(flag): try { print "try"; if (flag) throw } finally { print "finally" }
    if use_jsr:
        a = c.method("fin", "(I)V", max_stack=3, max_locals=3)
        a.place("s")
        println_str(a, "try")
        a.op("iload_0").op("ifeq", "ok")
        throw_new(a, "java/lang/RuntimeException", "thrown in try")
        a.place("ok")
        a.op("jsr", "sub")
        a.place("e")
        a.op("return")
        a.place("h")
        a.op("astore_1").op("jsr", "sub").op("aload_1").op("athrow")
        a.place("sub")
        a.op("astore_2")
        println_str(a, "finally")
        a.op("ret", 2)
        a.handler("s", "e", "h", None)
    else:
        a = c.method("fin", "(I)V", max_stack=3, max_locals=2)
        a.place("s")
        println_str(a, "try")
        a.op("iload_0").op("ifeq", "ok")
        throw_new(a, "java/lang/RuntimeException", "thrown in try")
        a.place("ok")
        a.frame("ok", [INT])
        a.place("e")
        println_str(a, "finally")
        a.op("return")
        a.place("h")
        a.frame("h", [INT], [obj("java/lang/Throwable")])
        a.op("astore_1")
        println_str(a, "finally")
        a.op("aload_1").op("athrow")
        a.handler("s", "e", "h", None)

    # A constructor that throws before super() (x > 100) or after it (x < 0).
    a = c.method("<init>", "(I)V", access=PUBLIC, max_stack=3, max_locals=2)
    a.op("iload_1").op("bipush", 100).op("if_icmple", "l1")
    throw_new(a, "java/lang/IllegalArgumentException", "too big")
    a.place("l1")
    a.frame("l1", [("uninitThis",), INT])
    a.op("aload_0").op("invokespecial", cp.method("java/lang/Object", "<init>", "()V"))
    a.op("iload_1").op("ifge", "l2")
    throw_new(a, "java/lang/IllegalArgumentException", "negative")
    a.place("l2")
    a.frame("l2", [obj(name), INT])
    a.op("return")
    a = c.method("construct", "(I)I", max_stack=3, max_locals=1)
    a.place("s")
    a.op("new", cp.klass(name)).op("dup").op("iload_0").op("invokespecial", cp.method(name, "<init>", "(I)V"))
    a.op("pop").op("iconst_1").op("ireturn")
    a.place("h")
    a.frame("h", [INT], [obj("java/lang/IllegalArgumentException")])
    a.op("pop").op("iconst_m1").op("ireturn")
    a.handler("s", "h", "h", "java/lang/IllegalArgumentException")

    a = c.method("main", "([Ljava/lang/String;)V", max_stack=6, max_locals=2)
    println_str(a, name + " start")
    for k in (1, -1, 1000):
        print_call(a, name, "construct", "(I)I", k)
    print_call(a, name, "loop", "(I)I", 10)
    print_call(a, name, "fact", "(I)I", 6)
    a.op("getstatic", cp.field("java/lang/System", "out", OUT[1]))
    a.op("new", cp.klass(name)).op("dup").op("invokespecial", cp.method(name, "<init>", "()V"))
    a.op("iconst_3").op("iconst_4").op("invokevirtual", cp.method(name, "add", "(II)I"))
    a.op("invokevirtual", cp.method(OUT[0], "println", "(I)V"))
    print_call(a, name, "catcher", "(I)I", 5)
    for k in (-1, 0, 2, 3, 100):
        print_call(a, name, "sw", "(I)I", k)
    for k in (1, 5, 1000, 7):
        print_call(a, name, "lsw", "(I)I", k)
    print_call(a, name, "arrays", "(I)I", 3)
    print_call(a, name, "longs", "(J)J", ("long", 12345678901))
    print_call(a, name, "longs", "(J)J", ("long", -5))
    a.op("iconst_0").op("invokestatic", cp.method(name, "fin", "(I)V"))
    a.place("ts")
    a.op("iconst_1").op("invokestatic", cp.method(name, "fin", "(I)V"))
    a.place("te")
    a.op("goto", "done")
    a.place("h")
    a.frame("h", [obj("[Ljava/lang/String;")], [obj("java/lang/RuntimeException")])
    a.op("astore_1").op("getstatic", cp.field("java/lang/System", "out", OUT[1])).op("aload_1")
    a.op("invokevirtual", cp.method("java/lang/Throwable", "getMessage", "()Ljava/lang/String;"))
    a.op("invokevirtual", cp.method(OUT[0], "println", "(Ljava/lang/String;)V"))
    a.place("done")
    a.frame("done", [obj("[Ljava/lang/String;")])
    println_str(a, name + " end")
    a.op("return")
    a.handler("ts", "te", "h", "java/lang/RuntimeException")
    return c


# ------------------------------------------------------------ edge cases (50.0 / 51.0)

def edge_program(name, major):
    c = Cls(name, major)
    cp = c.cp
    c.default_init()
    calls = []   # (method, desc, [arg lists])

    def m(mname, desc="(I)I", args=((0,), (3,)), **kw):
        calls.append((mname, desc, args))
        return c.method(mname, desc, **kw)

    # Branch to offset 0; frame at offset 0.
    a = m("loopAtZero", args=((5,), (-2,)))
    a.place("top")
    a.frame("top", [INT])
    a.op("iinc", 0, -2).op("iload_0").op("ifgt", "top").op("iload_0").op("ireturn")

    # Last instruction is a goto back to offset 0.
    a = m("countdown", args=((4,), (0,)))
    a.place("top")
    a.frame("top", [INT])
    a.op("iload_0").op("ifgt", "body").op("bipush", 77).op("ireturn")
    a.place("body")
    a.frame("body", [INT])
    a.op("iinc", 0, -1).op("goto", "top")

    # A handler covering the whole method, itself included (end_pc = code_length).
    a = m("wholeHandler", args=((0,), (1,), (-1,)))
    a.place("s")
    a.op("iload_0").op("ifne", "thr").op("iconst_1").op("ireturn")
    a.place("thr")
    a.frame("thr", [INT])
    a.op("iload_0").op("ifgt", "thr2")
    a.op("iconst_1").op("iload_0").op("iconst_1").op("iadd").op("idiv").op("ireturn")  # 1/0 for x == -1
    a.place("thr2")
    a.frame("thr2", [INT])
    throw_new(a, "java/lang/IllegalStateException", "whole")
    a.place("h")
    a.frame("h", [INT], [obj("java/lang/Throwable")])
    a.op("pop").op("bipush", 42).op("ireturn")
    a.place("end")
    a.handler("s", "end", "h", "java/lang/Throwable")

    # offset_delta exactly 63: same_frame, then same_frame again, then
    # same_locals_1_stack_item, each with an allocation in between.
    a = m("delta63", args=((1,), (0,)))
    a.op("iload_0").op("ifle", "f1")                 # 0..3
    a.op("iconst_1").op("newarray", 10).op("pop")    # 4..7
    fill(a, 63 - 8)                                  # f1 at 63: first frame, delta 63
    a.place("f1")
    a.frame("f1", [INT])
    a.op("iload_0").op("ifle", "f2")                 # 63..66
    a.op("iconst_2").op("newarray", 10).op("pop")    # 67..70
    fill(a, 127 - 71)                                # f2 at 127: delta 63
    a.place("f2")
    a.frame("f2", [INT])
    a.op("iload_0").op("iload_0").op("ifle", "f3")   # 127..131
    a.op("iconst_3").op("newarray", 10).op("pop")    # 132..135
    fill(a, 191 - 136)                               # f3 at 191: delta 63, one stack item
    a.place("f3")
    a.frame("f3", [INT], [INT])
    a.op("ireturn")

    # Uninitialized(offset) on the stack across branches, after an allocation.
    a = m("uninit", desc="(I)Ljava/lang/String;", args=((0,), (2,)), max_stack=5)
    a.op("iconst_2").op("newarray", 8).op("pop")
    a.place("new")
    a.op("new", cp.klass("java/lang/StringBuilder")).op("dup")
    a.op("iconst_1").op("newarray", 5).op("pop")
    a.op("iload_0").op("ifeq", "z")
    a.op("ldc_w", cp.string("pos")).op("goto", "j")
    a.place("z")
    a.frame("z", [INT], [("uninit", "new"), ("uninit", "new")])
    a.op("ldc_w", cp.string("zero"))
    a.place("j")
    a.frame("j", [INT], [("uninit", "new"), ("uninit", "new"), obj("java/lang/String")])
    a.op("invokespecial", cp.method("java/lang/StringBuilder", "<init>", "(Ljava/lang/String;)V"))
    a.op("invokevirtual", cp.method("java/lang/StringBuilder", "toString", "()Ljava/lang/String;"))
    a.op("areturn")

    # Dead code (with an allocation and a return) after a return.
    a = m("deadCode")
    a.op("iload_0").op("ireturn")
    a.place("dead")
    a.frame("dead", [INT])
    a.op("iconst_1").op("newarray", 10).op("pop").op("iconst_0").op("ireturn")

    # 300 local slots: wide iload/istore/iinc, a full_frame with 300 locals.
    a = m("wideLocals", args=((4,), (0,)), max_locals=300)
    a.op("iload_0").op("wide_load_store", "istore", 299)
    a.op("iconst_0").op("istore_1")
    a.place("c")
    frame300 = [INT, INT] + [TOP] * 297 + [INT]
    a.frame("c", frame300)
    a.op("wide_load_store", "iload", 299).op("ifle", "end")
    a.op("wide_iinc", 299, -1).op("iinc", 1, 3)
    a.op("iconst_1").op("newarray", 10).op("pop")
    a.op("goto", "c")
    a.place("end")
    a.frame("end", frame300)
    a.op("iload_1").op("wide_load_store", "iload", 299).op("iadd").op("ireturn")

    # lookupswitch without pairs; tableswitch with negative keys.
    a = m("emptyLookup")
    a.op("iload_0").lookupswitch("d", {})
    a.place("d")
    a.frame("d", [INT])
    a.op("iload_0").op("iconst_1").op("iadd").op("ireturn")

    a = m("negTable", args=((-3,), (-2,), (-1,), (0,), (1,), (2,)))
    a.op("iload_0").tableswitch("d", -2, ["m2", "m1", "z", "p1"])
    for lab, v in (("m2", 102), ("m1", 101), ("z", 100), ("p1", 99), ("d", -1)):
        a.place(lab)
        a.frame(lab, [INT])
        push_int(a, v)
        a.op("ireturn")

    # The ireturn is a branch target and the end of the exception range.
    a = m("retTarget", args=((3,), (0,), (-1,)), max_stack=4)
    a.place("s")
    a.op("iload_0").op("dup").op("ifgt", "ret")
    a.op("iconst_5").op("iload_0").op("idiv").op("iadd")
    a.place("ret")
    a.frame("ret", [INT], [INT])
    a.op("ireturn")
    a.place("h")
    a.frame("h", [INT], [obj("java/lang/ArithmeticException")])
    a.op("pop").op("bipush", 99).op("ireturn")
    a.handler("s", "ret", "h", "java/lang/ArithmeticException")

    # A handler that is a bare athrow.
    a = c.method("rethrower", "(I)I")
    a.place("s")
    a.op("iload_0").op("ifle", "ok")
    throw_new(a, "java/lang/IllegalStateException", "rethrown")
    a.place("ok")
    a.frame("ok", [INT])
    a.op("iload_0").op("ireturn")
    a.place("h")
    a.frame("h", [INT], [obj("java/lang/Throwable")])
    a.op("athrow")
    a.handler("s", "h", "h", None)
    a = m("callRethrower", args=((0,), (2,)), max_locals=1)
    a.place("s")
    a.op("iload_0").op("invokestatic", cp.method(name, "rethrower", "(I)I")).op("ireturn")
    a.place("h")
    a.frame("h", [INT], [obj("java/lang/IllegalStateException")])
    a.op("pop").op("iconst_m1").op("ireturn")
    a.handler("s", "h", "h", "java/lang/IllegalStateException")

    # Two handlers on one range: the first that matches wins.
    a = m("handlerOrder", args=((0,), (1,), (2,)))
    a.place("s")
    a.op("iload_0").op("ifne", "n1")
    a.op("iconst_1").op("iload_0").op("idiv").op("ireturn")               # ArithmeticException
    a.place("n1")
    a.frame("n1", [INT])
    a.op("iload_0").op("iconst_1").op("if_icmpne", "n2")
    throw_new(a, "java/lang/IllegalStateException", "ise")                 # RuntimeException
    a.place("n2")
    a.frame("n2", [INT])
    a.op("iload_0").op("ireturn")
    a.place("e")
    a.place("h1")
    a.frame("h1", [INT], [obj("java/lang/ArithmeticException")])
    a.op("pop").op("bipush", 11).op("ireturn")
    a.place("h2")
    a.frame("h2", [INT], [obj("java/lang/RuntimeException")])
    a.op("pop").op("bipush", 22).op("ireturn")
    a.handler("s", "e", "h1", "java/lang/ArithmeticException")
    a.handler("s", "e", "h2", "java/lang/RuntimeException")

    # goto_w in the input; a conditional branch to the next instruction.
    a = m("gotoWide", args=((1,), (-1,)))
    a.op("iload_0").op("ifle", "neg").op("iinc", 0, 10).op("goto_w", "end")
    a.place("neg")
    a.frame("neg", [INT])
    a.op("iinc", 0, -10)
    a.place("end")
    a.frame("end", [INT])
    a.op("iload_0").op("ireturn")

    a = m("branchToNext", args=((0,), (1,)))
    a.op("iload_0").op("ifeq", "next")
    a.place("next")
    a.frame("next", [INT])
    a.op("iload_0").op("iconst_2").op("imul").op("ireturn")

    # Always throws (no return instruction at all).
    a = c.method("alwaysThrows", "(I)V")
    throw_new(a, "java/lang/UnsupportedOperationException", "always")
    a = m("callAlways", max_locals=1)
    a.place("s")
    a.op("iload_0").op("invokestatic", cp.method(name, "alwaysThrows", "(I)V")).op("iconst_0").op("ireturn")
    a.place("h")
    a.frame("h", [INT], [obj("java/lang/UnsupportedOperationException")])
    a.op("pop").op("iconst_m1").op("ireturn")
    a.handler("s", "h", "h", "java/lang/UnsupportedOperationException")

    main_program(c, calls)
    return c


def main_program(c, calls):
    cp, name = c.cp, c.name
    a = c.method("main", "([Ljava/lang/String;)V", max_stack=4, max_locals=1)
    println_str(a, name + " start")
    for mname, desc, arglist in calls:
        for args in arglist:
            if desc.endswith(")I"):
                print_call(a, name, mname, desc, *args)
            else:
                a.op("getstatic", cp.field("java/lang/System", "out", OUT[1]))
                push_int(a, args[0])
                a.op("invokestatic", cp.method(name, mname, desc))
                a.op("invokevirtual", cp.method(OUT[0], "println", "(Ljava/lang/Object;)V"))
    println_str(a, name + " end")
    a.op("return")


def ctor_try_program(name, major):
    """A constructor whose super() call is inside a try range (the handler
    ends in athrow, which the old verifier requires).  The type checker (51+)
    cannot express a handler frame for such a range, so this is 49.0 only."""
    c = Cls(name, major, stackmap=False)
    cp = c.cp
    calls = []

    def m(mname, desc="(I)I", args=((0,), (3,)), **kw):
        calls.append((mname, desc, args))
        return c.method(mname, desc, **kw)

    a = c.method("<init>", "(I)V", access=PUBLIC, max_stack=3, max_locals=2)
    a.place("s")
    a.op("aload_0").op("invokespecial", cp.method("java/lang/Object", "<init>", "()V"))
    a.place("e")
    a.op("iload_1").op("ifge", "ok")
    throw_new(a, "java/lang/IllegalArgumentException", "negative")
    a.place("ok")
    a.frame("ok", [obj(name), INT])
    a.op("return")
    a.place("h")
    a.frame("h", [("uninitThis",), INT], [obj("java/lang/Throwable")])
    a.op("athrow")
    a.handler("s", "e", "h", None)
    a = m("construct", args=((1,), (-1,)), max_stack=3, max_locals=1)
    a.place("s")
    a.op("new", cp.klass(name)).op("dup").op("iload_0").op("invokespecial", cp.method(name, "<init>", "(I)V"))
    a.op("pop").op("iconst_1").op("ireturn")
    a.place("h")
    a.frame("h", [INT], [obj("java/lang/IllegalArgumentException")])
    a.op("pop").op("iconst_m1").op("ireturn")
    a.handler("s", "h", "h", "java/lang/IllegalArgumentException")

    main_program(c, calls)
    return c


# ------------------------------------------------------------ far branches (51.0, 49.0)

DS = range(9)


def far_program(name):
    """Four families of methods with spans at the 16-bit limit; see the module doc."""
    c = Cls(name, 51)
    cp = c.cp
    c.default_init()
    calls = []
    ARR = obj("[I")
    for d in DS:
        # fwdIf: ifle at 3 spans 32767-d; an allocation inside.
        a = c.method("fwdIf%d" % d, "(I)I", max_stack=2, max_locals=2)
        a.op("aconst_null").op("astore_1").op("iload_0").op("ifle", "L")
        a.op("iconst_1").op("newarray", 10).op("astore_1")
        fill(a, 32760 - d)
        a.place("L")
        a.frame("L", [INT, ARR])
        a.op("iload_0").op("aload_1").op("ifnull", "z").op("aload_1").op("arraylength").op("iadd")
        a.place("z")
        a.frame("z", [INT, ARR], [INT])
        a.op("ireturn")
        calls += [("fwdIf%d" % d, 1), ("fwdIf%d" % d, 0)]

        # bwdIf: do/while, if_icmplt spans -(32768-d); an allocation inside.
        a = c.method("bwdIf%d" % d, "(I)I", max_stack=2, max_locals=3)
        a.op("aconst_null").op("astore_1").op("iconst_0").op("istore_2")
        a.place("L")
        a.frame("L", [INT, ARR, INT])
        a.op("iconst_1").op("newarray", 10).op("astore_1")
        fill(a, 32759 - d, var=2)
        a.op("iinc", 2, 1).op("iload_2").op("iload_0").op("if_icmplt", "L")
        a.op("iload_2").op("aload_1").op("arraylength").op("iadd").op("ireturn")
        calls += [("bwdIf%d" % d, 0), ("bwdIf%d" % d, 1000000)]

        # fwdGoto: if/else, the goto over the else branch spans 32767-d.
        a = c.method("fwdGoto%d" % d, "(I)I", max_stack=2, max_locals=2)
        a.op("aconst_null").op("astore_1").op("iload_0").op("ifle", "else")
        a.op("iinc", 0, 1).op("goto", "end")
        a.place("else")
        a.frame("else", [INT, ("null",)])
        a.op("iconst_1").op("newarray", 10).op("astore_1")
        fill(a, 32760 - d)
        a.place("end")
        a.frame("end", [INT, ARR])
        a.op("iload_0").op("ireturn")
        calls += [("fwdGoto%d" % d, 1), ("fwdGoto%d" % d, 0)]

        # bwdGoto: loop whose exit is a return at the top; goto back spans -(32768-d).
        a = c.method("bwdGoto%d" % d, "(I)I", max_stack=2, max_locals=3)
        a.op("aconst_null").op("astore_1").op("iconst_0").op("istore_2")
        a.place("cond")
        a.frame("cond", [INT, ARR, INT])
        a.op("iload_2").op("iload_0").op("if_icmplt", "body").op("iload_2").op("ireturn")
        a.place("body")
        a.frame("body", [INT, ARR, INT])
        a.op("iconst_1").op("newarray", 10).op("astore_1")
        fill(a, 32754 - d, var=2)
        a.op("iinc", 2, 1).op("goto", "cond")
        calls += [("bwdGoto%d" % d, 0), ("bwdGoto%d" % d, 1000000)]
    main_calls(c, calls)
    return c


def jsr_far_program(name):
    c = Cls(name, 49, stackmap=False)
    cp = c.cp
    c.default_init()
    calls = []
    for d in DS:
        # jsr forward: spans 32767-d.
        a = c.method("jsrFwd%d" % d, "(I)I", max_stack=2, max_locals=3)
        a.op("iconst_0").op("istore_1").op("jsr", "sub")                 # jsr at 2
        a.op("iload_0").op("ifle", "ret")
        a.op("iconst_1").op("newarray", 10).op("pop")                     # 9..12
        fill(a, 32754 - d)
        a.place("ret")
        a.op("iload_1").op("ireturn")
        a.place("sub")                                                    # 2 + 32767 - d
        a.op("astore_2").op("iinc", 1, 5).op("ret", 2)
        calls += [("jsrFwd%d" % d, 1), ("jsrFwd%d" % d, 0)]
        # jsr backward: spans -(32768-d).
        a = c.method("jsrBwd%d" % d, "(I)I", max_stack=2, max_locals=3)
        a.op("iconst_0").op("istore_1").op("goto", "start")
        a.place("sub")                                                    # 5
        a.op("astore_2").op("iinc", 1, 7).op("ret", 2)
        a.place("start")                                                  # 11
        a.op("iconst_1").op("newarray", 10).op("pop")
        fill(a, 32758 - d)
        a.op("jsr", "sub")                                                # 15 + 32758 - d
        a.op("iload_1").op("iload_0").op("iadd").op("ireturn")
        calls += [("jsrBwd%d" % d, 3)]
    main_calls(c, calls)
    return c


def main_calls(c, calls):
    a = c.method("main", "([Ljava/lang/String;)V", max_stack=4, max_locals=1)
    println_str(a, c.name + " start")
    for mname, arg in calls:
        print_call(a, c.name, mname, "(I)I", arg)
    println_str(a, c.name + " end")
    a.op("return")


def overflow_program(name):
    c = Cls(name, 52)
    c.default_init()
    a = c.method("big", "(I)I", max_stack=2)
    a.op("iconst_1").op("newarray", 10).op("pop")
    fill(a, 65535 - 4 - 2)
    a.op("iload_0").op("ireturn")
    main_calls(c, [("big", 1)])
    return c


def cp_full_program(name):
    """constant_pool_count 65535 (the maximum): nothing can be appended."""
    c = Cls(name, 52)
    c.default_init()
    a = c.method("twice", "(I)I", max_stack=2)
    a.op("iload_0").op("iconst_2").op("imul").op("ireturn")
    main_calls(c, [("twice", 21)])
    c.cp_pad_to = 65535
    return c


MANY_CLASSES, MANY_METHODS = 17, 2000


def many_methods_programs():
    """17 classes of 2,000 methods (34,000 method ids in one hprof-bci run):
    ids above 32767, pushed with ldc/ldc_w of an Integer constant.  (Not one
    class of 34,000 methods: hprof-bci's time grows with methods x constant
    pool size.)  ManyMain calls the first and last method of each class."""
    out = []
    for n in range(MANY_CLASSES):
        c = Cls("many/Many%02d" % n, 52)
        c.default_init()
        for k in range(MANY_METHODS):
            a = c.method("m%d" % k, "(I)I", max_stack=2)
            a.op("iload_0")
            push_int(a, k)
            a.op("iadd").op("ireturn")
        out.append(c)
    c = Cls("many/ManyMain", 52)
    c.default_init()
    a = c.method("main", "([Ljava/lang/String;)V", max_stack=4, max_locals=1)
    for n in range(MANY_CLASSES):
        for k in (0, MANY_METHODS - 1):
            print_call(a, "many/Many%02d" % n, "m%d" % k, "(I)I", n)
    a.op("return")
    out.append(c)
    return out


# ------------------------------------------------------------ all

def programs():
    """[(group, Cls, flags)]; flags: 'failover' when the JVM is expected to
    fall back to the old verifier for this class (50.0 without a usable
    StackMapTable), 'typecheck' when it must not."""
    out = []
    for cname, major, minor, jsr, smt, flags in (
            ("old/V45_3", 45, 3, True, False, "inference"),
            ("old/V46", 46, 0, True, False, "inference"),
            ("old/V48", 48, 0, True, False, "inference"),
            ("old/V49", 49, 0, True, False, "inference"),
            ("old/V50", 50, 0, False, True, "typecheck"),
            ("old/V50NoMap", 50, 0, False, False, "failover"),
            ("old/V50Jsr", 50, 0, True, False, "failover"),
            ("old/V51", 51, 0, False, True, "typecheck")):
        out.append(("old", old_program(cname, major, minor, jsr, smt), flags))
    out.append(("edge", edge_program("edge/E50", 50), "typecheck"))
    out.append(("edge", edge_program("edge/E51", 51), "typecheck"))
    out.append(("edge", ctor_try_program("edge/CtorTry49", 49), "inference"))
    out.append(("far", far_program("far/Far51"), "typecheck"))
    out.append(("far", jsr_far_program("far/JsrFar49"), "inference"))
    out.append(("overflow", overflow_program("overflow/Overflow52"), "typecheck"))
    out.append(("overflow", cp_full_program("overflow/CpFull52"), "typecheck"))
    for c in many_methods_programs():
        out.append(("many", c, "typecheck" if c.name.endswith("Main") else "library"))
    return out


def main():
    outdir = sys.argv[1]
    lines = []
    for group, c, flags in programs():
        path = os.path.join(outdir, group, c.name + ".class")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(c.bytes())
        lines.append("%s %s %d.%d %s" % (group, c.name.replace("/", "."), c.major, c.minor, flags))
    with open(os.path.join(outdir, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
