#!/usr/bin/env python3
"""Evidence for the rewriter problems the bci tests found (not run by the
tests).  Writes into OUTDIR (default build/tests/bci/repro):

  WholeCtor49.class      49.0: one catch-all handler (ending in athrow) over a
                         whole constructor -- code before super(), the super()
                         call, code after it -- passes -Xverify:all (the old
                         verifier), so classes below 50.0 need not leave
                         constructors without an exceptional-exit handler.
  PreSuper51.class       51.0: a handler over the code before super() whose
                         frame is {locals [uninitializedThis], stack
                         [Throwable]} and which ends in athrow passes the type
                         checker: the pre-super region can be covered.
  many/ManyMethods33000.class   52.0, 33,000 methods: hprof-bci's time grows
                         with methods x constant pool size (~9 s here).

    java -Xverify:all -cp OUTDIR WholeCtor49     # "catch-all ran" twice
    java -Xverify:all -cp OUTDIR PreSuper51      # "pre-super handler ran"
    time build/hprof-bci --quiet OUTDIR/many /tmp/many-out
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import classgen as G  # noqa: E402


def whole_ctor_49():
    c = G.Cls("WholeCtor49", 49, stackmap=False)
    cp = c.cp
    a = c.method("<init>", "(I)V", access=G.PUBLIC, max_stack=3, max_locals=2)
    a.place("s")
    a.op("iload_1").op("bipush", 100).op("if_icmple", "l1")
    G.throw_new(a, "java/lang/IllegalArgumentException", "too big")
    a.place("l1")
    a.op("aload_0").op("invokespecial", cp.method("java/lang/Object", "<init>", "()V"))
    a.op("iload_1").op("ifge", "l2")
    G.throw_new(a, "java/lang/IllegalArgumentException", "negative")
    a.place("l2")
    a.op("return")
    a.place("h")
    G.println_str(a, "catch-all ran")
    a.op("athrow")
    a.handler("s", "h", "h", None)
    m = c.method("main", "([Ljava/lang/String;)V", max_stack=4, max_locals=2)
    for v in (1, -1, 1000):
        m.place("s%d" % v)
        m.op("new", cp.klass("WholeCtor49")).op("dup")
        G.push_int(m, v)
        m.op("invokespecial", cp.method("WholeCtor49", "<init>", "(I)V")).op("pop")
        m.place("e%d" % v)
        m.op("goto", "n%d" % v)
        m.place("h%d" % v)
        m.op("astore_1")
        G.println_str(m, "caught")
        m.place("n%d" % v)
        m.handler("s%d" % v, "e%d" % v, "h%d" % v, "java/lang/IllegalArgumentException")
    m.op("return")
    return c


def pre_super_51():
    c = G.Cls("PreSuper51", 51)
    cp = c.cp
    a = c.method("<init>", "(I)V", access=G.PUBLIC, max_stack=3, max_locals=2)
    a.place("s")
    a.op("iload_1").op("bipush", 100).op("if_icmple", "l1")
    G.throw_new(a, "java/lang/IllegalArgumentException", "too big")
    a.place("l1")
    a.frame("l1", [("uninitThis",), G.INT])
    a.op("aload_0")
    a.place("e")                     # the super() call itself stays outside
    a.op("invokespecial", cp.method("java/lang/Object", "<init>", "()V"))
    a.op("return")
    a.place("h")
    a.frame("h", [("uninitThis",)], [G.obj("java/lang/Throwable")])
    G.println_str(a, "pre-super handler ran")
    a.op("athrow")
    a.handler("s", "e", "h", None)
    m = c.method("main", "([Ljava/lang/String;)V", max_stack=3, max_locals=1)
    m.op("new", cp.klass("PreSuper51")).op("dup").op("sipush", 1000)
    m.op("invokespecial", cp.method("PreSuper51", "<init>", "(I)V")).op("return")
    return c


def many_methods():
    c = G.Cls("many/ManyMethods33000", 52)
    c.default_init()
    for k in range(33000):
        a = c.method("m%d" % k, "(I)I", max_stack=2)
        a.op("iload_0")
        G.push_int(a, k)
        a.op("iadd").op("ireturn")
    return c


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "tests", "bci", "repro")
    for c in (whole_ctor_49(), pre_super_51(), many_methods()):
        p = os.path.join(out, c.name + ".class")
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(c.bytes())
        print(p)


if __name__ == "__main__":
    main()
