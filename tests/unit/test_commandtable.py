"""The commands' table (harnessctl/commandtable.py): which arguments name sessions."""

from __future__ import annotations

import pytest

from harnessctl.commandtable import BY_NAME


@pytest.mark.parametrize("command, args, options, addresses", [
    ("send", ["a.jsonl", "hi"], {}, ["a.jsonl"]),
    ("reply", ["a.jsonl", "req-1", "allow"], {}, ["a.jsonl"]),
    ("fork", ["a.jsonl", "b.jsonl"], {}, ["a.jsonl", "b.jsonl"]),
    ("status", ["a.jsonl", "b.jsonl", "dir/"], {}, ["a.jsonl", "b.jsonl", "dir/"]),
    ("wait", ["a.jsonl", "id-1"], {}, ["a.jsonl"]),
    ("wait", ["a.jsonl", "b.jsonl"], {"--any": ""}, ["a.jsonl", "b.jsonl"]),
    ("serve", ["dir/"], {}, []),
    ("agents", [], {}, []),
])
def test_the_arguments_that_name_sessions_are_files_and_new_files(command, args, options, addresses):
    assert BY_NAME[command].addresses(args, options) == addresses
