"""FILE.d/runtime.host (harnessctl/store/holder.py): the record of the machine whose runtime
holds a session, read as untrusted text."""

from __future__ import annotations

import os

import pytest

from harnessctl.store import holder
from harnessctl.store.address import Address


@pytest.fixture
def addr(tmp_path):
    os.mkdir(str(tmp_path / "e.jsonl.d"), 0o700)
    return Address(str(tmp_path / "e.jsonl"))


def plant(addr, text):
    with open(addr.runtime_host, "w") as f:
        f.write(text)


def test_a_record_gives_its_host_and_pid():
    assert holder.parse("node7.cluster-a_1 4242\n") == ("node7.cluster-a_1", 4242)


@pytest.mark.parametrize("text", [
    "", "node7 4242", "node7\n", "node7 4242 1\n", "node7  4242\n", " 4242\n", "node7 0\n", "node7 -1\n",
    "node7 12345678901\n", "no/de 4242\n", "no\tde 4242\n", "no\x1bde 4242\n", "n\u00f6de 4242\n",
    "node7 \u0664\u0662\n", "n" * 254 + " 4242\n", "node7 4242\nnode8 4243\n",
], ids=repr)
def test_a_malformed_record_is_none(text):
    assert holder.parse(text) is None


def test_the_longest_host_name_is_taken():
    assert holder.parse("n" * 253 + " 1\n") == ("n" * 253, 1)


def test_a_written_record_names_this_machine_and_this_process(addr):
    holder.write(addr)
    with open(addr.runtime_host) as f:
        assert f.read() == "%s %d\n" % (os.uname().nodename, os.getpid())
    assert os.stat(addr.runtime_host).st_mode & 0o777 == 0o600


def test_a_record_of_this_machine_is_not_elsewhere(addr):
    holder.write(addr)
    assert holder.elsewhere(addr) is None


def test_a_record_of_another_machine_is_elsewhere(addr):
    plant(addr, "node7 4242\n")
    assert holder.elsewhere(addr) == ("node7", 4242)


def test_a_record_writable_by_others_is_not_read(addr):
    plant(addr, "node7 4242\n")
    os.chmod(addr.runtime_host, 0o666)
    assert holder.elsewhere(addr) is None


def test_a_record_too_long_to_be_one_is_not_read(addr):
    plant(addr, "node7 4242\n" + " " * holder.MOST)
    assert holder.elsewhere(addr) is None


def test_forget_removes_our_own_record(addr):
    holder.write(addr)
    holder.forget(addr)
    assert not os.path.exists(addr.runtime_host)


def test_forget_leaves_another_runtimes_record(addr):
    plant(addr, "node7 4242\n")
    holder.forget(addr)
    assert os.path.exists(addr.runtime_host)


def test_held_elsewhere_names_the_ssh_address(addr):
    held = holder.HeldElsewhere(addr, "node7", 4242)
    assert held.held_by() == {"host": "node7", "pid": 4242, "address": "ssh://node7" + addr.path}
    assert held.exit_code == 5 and "ssh://node7" + addr.path in str(held)
