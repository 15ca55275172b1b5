"""The harness stdout splitter (harnessctl/proc.py Lines): lines across reads,
and a line over the cap dropped up to its newline, in order with the others."""

from __future__ import annotations

from harnessctl.proc import Lines


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
