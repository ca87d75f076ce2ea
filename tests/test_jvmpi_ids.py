"""Ids of new objects that stay pending (untagged) until a look-up needs
them (issue 34 item 3; src/jvmpi/pending_ids.c): the agent must not see the
difference.

    jvmpi_ids_pending  tests/java/AllocTruth.java under build/libjvmpi.so with
                 tests/jvmpi/free_logger.c watching one class. AllocTruth$Refl:
                 1,000 made by Constructor.newInstance, 10 kept (reflection:
                 the constructor gives the object its pending id, then JVMTI's
                 VMObjectAlloc reports the same object, which must find that
                 id, not give a second); AllocTruth$Copy: 1 by `new`, 500 by
                 clone() (VMObjectAlloc only), the original dead at exit (but
                 not always collected by then, on the layer before this change
                 too: its free is not asserted). Exactly those OBJECT_ALLOCs
                 (Refl: and OBJECT_FREEs), and after the collections every
                 live one found by its id as itself (jobjectID2jobject,
                 RequestEvent(OBJECT_ALLOC)): a pending id promoted to its
                 tag, never changed; every freed id refused. Fails if the
                 VMObjectAlloc after reflection's constructor does not look
                 for the pending id (more than 1,000 OBJECT_ALLOCs then).
"""

import os
import re

import pytest

import run

LAYER = os.path.join(run.BUILD, "libjvmpi.so")


@pytest.fixture
def free_logger(jvmpi_agents):
    """The layer and the test agents built (conftest's jvmpi_agents); free_logger's path."""
    return os.path.join(jvmpi_agents, "libfree_logger.so")


@pytest.mark.parametrize("watched,allocated,live", [("AllocTruth$Refl", 1000, 10), ("AllocTruth$Copy", 501, None)])
def test_jvmpi_ids_pending(ctx, free_logger, watched, allocated, live):
    out = ctx.path("free-%s.txt" % watched.split("$")[1])
    r = ctx.run("AllocTruth", agent="%s=out=%s,class=%s,gone=AllocTruth$None" % (free_logger, out, watched),
                agent_path=LAYER)
    assert os.path.isfile(out), "free_logger wrote no %s; stderr: %s" % (out, r.stderr[-500:])
    text = open(out).read()
    m = re.search(r"^objects allocated (\d+) freed (\d+) misplaced 0$", text, re.M)
    assert m and int(m.group(1)) == allocated, \
        "expected %d %s allocated (one OBJECT_ALLOC each):\n%s" % (allocated, watched, text)
    freed = int(m.group(2))
    if live is not None:
        assert freed == allocated - live, "expected %d of them freed:\n%s" % (allocated - live, text)
    lookups = re.findall(r"^lookup .*$", text, re.M)
    want = "lookup live %d right %d wrong 0 freed_refused %d freed_answered 0" % (allocated - freed,
                                                                                allocated - freed, freed)
    assert lookups and all(l == want for l in lookups), "expected %r, got:\n%s" % (want, text)
    assert "jvmpi:" not in r.stderr, "the layer complained: %s" % r.stderr[-500:]
