"""The harness stdout splitter (harnessctl/runtime/proc.py Lines): lines across reads,
and a line over the cap dropped up to its newline, in order with the others;
and the tail of its stderr a Process keeps."""

from __future__ import annotations

import sys
import threading

from harnessctl.kit.backend import STDERR_TAIL
from harnessctl.runtime.proc import Lines, Process


def split(chunks, limit=10):
    said = []
    lines = Lines(lambda batch: said.extend(batch), lambda size: said.append(size), limit=limit)
    for chunk in chunks:
        lines.feed(chunk)
    lines.close()
    return said


def test_lines_across_reads_and_a_last_line_without_newline():
    assert split([b"ab", b"c\r\nde", b"f\ng", b"h"]) == ["abc", "def", "gh"]


def test_a_line_over_the_cap_is_dropped_to_its_newline_and_only_its_size_is_said():
    assert split([b"ok\n" + b"x" * 8, b"y" * 8, b"z\nnext\n"]) == ["ok", 17, "next"]


def test_a_line_over_the_cap_at_end_of_file_is_said_too():
    assert split([b"x" * 11]) == [11]


def test_the_stderr_tail_holds_the_last_bytes_the_child_wrote_by_its_exit():
    logged, exited = [], threading.Event()
    script = "import sys; sys.stderr.write('x' * %d + 'the reason\\n')" % (STDERR_TAIL * 3)
    child = Process([sys.executable, "-c", script], {}, "/", logged.append, lambda lines: None,
                    lambda size: None, lambda code: exited.set())
    assert exited.wait(30)
    tail = child.stderr_tail()
    assert tail.endswith("x" * 10 + "the reason\n") and len(tail) == STDERR_TAIL
    assert b"".join(logged).endswith(b"the reason\n")  # the runtime log still gets all of it
