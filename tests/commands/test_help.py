"""`--help` for each command, and the messages a mistyped command line gets."""

from __future__ import annotations

import pytest
from cliutil import ok, run

from harnessctl.commandtable import BY_NAME

COMMANDS = ("send", "wait", "status", "reply", "cancel")


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help_shows_its_synopsis_arguments_knobs_and_exit_codes(command):
    text = ok(command, "--help").stdout.decode()
    assert text.startswith("usage: harnessctl %s " % command)
    for part in ("arguments:", "FILE", "knobs:", "HARNESSCTL_TIMEOUT (30 s", "exit codes:", "  0 ", "  2 "):
        assert part in text, part


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help_lists_its_exit_codes_in_numeric_order(command):
    codes = listed_exit_codes(ok(command, "--help").stdout.decode())
    assert codes == sorted(codes) and codes[0] == 0, codes


def test_send_help_lists_no_exit_code_a_send_cannot_return():
    codes = listed_exit_codes(ok("send", "--help").stdout.decode())
    assert 3 not in codes and 4 not in codes, codes


def test_help_of_the_commands_that_read_an_existing_file_lists_exit_4():
    for command in ("wait", "status", "reply", "cancel", "log"):
        assert 4 in listed_exit_codes(ok(command, "--help").stdout.decode()), command


def listed_exit_codes(text):
    """The codes of the `exit codes:` lines, in the order printed."""
    lines = text.split("exit codes:\n", 1)[1].splitlines()
    return [int(line.split()[0]) for line in lines if line[:2] == "  " and line.split()[0].isdigit()]


def test_send_help_lists_every_flag_with_its_default():
    text = ok("send", "--help").stdout.decode()
    for flag in ("--cwd DIR", "--model MODEL", "--adapter NAME", "--print-id", "--wait", "--timeout S"):
        assert flag in text, flag
    assert "default: the current directory" in text and "default: no limit" in text
    for code in ("  7 ", "  8 ", "  9 ", "  10 ", "  130 "):
        assert code in text, code


def test_overview_points_to_the_event_format_and_the_contract():
    text = ok("--help").stdout.decode()
    assert "EVENT.md" in text and "docs/PROTOCOL.md" in text and "harnessctl COMMAND --help" in text
    assert all(("harnessctl %s " % command) in text for command in COMMANDS)


def test_help_after_the_separator_is_text_not_a_flag(efile):
    proc = run("send", efile, "--adapter", "mock", "--wait", "--", "--help")
    assert proc.returncode == 0 and b'"output":"echo: --help"' in proc.stdout, proc.stderr


def test_mistyped_command_gets_a_suggestion():
    proc = run("sned", "x.jsonl")
    assert proc.returncode == 2
    assert proc.stderr.startswith(b"harnessctl: unknown command 'sned'; did you mean 'send'?")


def test_mistyped_flag_gets_a_suggestion(efile):
    proc = run("send", efile, "hi", "--wiat")
    assert proc.returncode == 2 and b"unknown option --wiat for send; did you mean '--wait'?" in proc.stderr


def test_a_flag_far_from_any_gets_no_suggestion(efile):
    proc = run("send", efile, "hi", "--colour")
    assert proc.returncode == 2 and b"did you mean" not in proc.stderr


def test_missing_argument_is_named(efile):
    proc = run("reply", efile)
    assert proc.returncode == 2
    assert b"reply: missing REQUEST_ID (usage: harnessctl reply FILE REQUEST_ID [ANSWER])" in proc.stderr


def test_unquoted_multi_word_text_gets_a_hint_to_quote_it(efile):
    proc = run("send", efile, "fix", "the", "tests")
    assert proc.returncode == 2
    assert b"send takes one TEXT, got 3 words: quote it (harnessctl send FILE 'fix the tests')" in proc.stderr


def test_one_extra_argument_reads_right(efile):
    proc = run("rebind", efile, "now")
    assert proc.returncode == 2 and b"rebind takes 1 argument (FILE), got 2; extra: 'now'" in proc.stderr


@pytest.mark.parametrize("command", list(BY_NAME))
def test_usage_line_names_every_option_and_flag_the_command_accepts(command):
    text = ok(command, "--help").stdout.decode()
    usage = text.split("\n\n", 1)[0]
    for name in BY_NAME[command].options + BY_NAME[command].flags:
        assert "[%s" % name in usage or "%s " % name in usage or "| %s]" % name in usage, name


@pytest.mark.parametrize("argv", [("nosuch", "--help"), ("sned", "-h"), ("sned", "x.jsonl", "--help")])
def test_help_of_an_unknown_command_is_the_unknown_command_error(argv):
    """A script testing `harnessctl CMD --help` for a command must learn it does not exist (exit 2)."""
    proc = run(*argv)
    assert proc.returncode == 2 and proc.stdout == b"", proc
    line = proc.stderr.decode()
    assert line.startswith("harnessctl: unknown command %r" % argv[0]) and line.count("\n") == 1, line
    assert ("did you mean 'send'?" in line) == (argv[0] == "sned"), line
