"""The command-line parser the permission policy judges commands by
(harnessctl/checks/commandline.py): simple commands, verifiability, deny views."""

from __future__ import annotations

import os

import pytest

from harnessctl.checks import commandline


def words(line, cwd="/repo"):
    """Each simple command of `line` as its written words (assignments first)."""
    return [list(c.assigns + c.words) for c in commandline.parse(line, cwd).commands]


def why(line, cwd="/repo"):
    return commandline.parse(line, cwd).why


def views(line, cwd="/repo"):
    return {" ".join(v) for v in commandline.parse(line, cwd).all_views()}


@pytest.fixture
def cwd(tmp_path):
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "out.txt").write_text("")
    return os.path.realpath(str(root))


# -- splitting ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("line, expected", [
    ("pytest -q tests/", [["pytest", "-q", "tests/"]]),
    ("a && b || c; d | e", [["a"], ["b"], ["c"], ["d"], ["e"]]),
    ("a\nb\n\nc;", [["a"], ["b"], ["c"]]),
    ("a;b&&c", [["a"], ["b"], ["c"]]),
])
def test_a_line_splits_into_simple_commands_at_control_operators(line, expected):
    assert words(line) == expected and why(line) is None


@pytest.mark.parametrize("line, expected", [
    ("echo 'a b' \"c d\"", ["echo", "a b", "c d"]),
    ('echo "a \\"b\\" \\\\ \\$x \\` \\n"', ["echo", 'a "b" \\ $x ` \\n']),
    ("echo a\\ b \\'c", ["echo", "a b", "'c"]),
    ("echo 'x'\"y\"z", ["echo", "xyz"]),
    ("echo a\\\nb", ["echo", "ab"]),
    ("ec\\\nho x", ["echo", "x"]),
])
def test_quotes_and_backslashes_are_removed_as_the_shell_removes_them(line, expected):
    assert words(line) == [expected]


def test_a_hash_at_the_start_of_a_word_comments_out_the_rest_of_the_line():
    assert words("rm -rf ~ #pytest") == [["rm", "-rf", "~"]]


def test_a_hash_inside_a_word_is_part_of_it():
    assert words("echo a#b '#c'") == [["echo", "a#b", "#c"]]


def test_a_comment_ends_at_the_newline():
    assert words("ls # note\npwd") == [["ls"], ["pwd"]]


def test_leading_assignments_are_kept_apart_from_the_words():
    command = commandline.parse("FOO=1 BAR+=x pytest -q A=2", "/repo").commands[0]
    assert (command.assigns, command.words) == (("FOO=1", "BAR+=x"), ("pytest", "-q", "A=2"))


def test_a_quoted_name_is_not_an_assignment():
    assert commandline.parse("'FOO=1' pytest", "/repo").commands[0].assigns == ()


def test_a_plain_variable_in_double_quotes_is_kept_literally_and_verifiable():
    assert words('echo "$HOME" "${USER}/x" "$1"') == [["echo", "$HOME", "${USER}/x", "$1"]]
    assert why('echo "$HOME" "${USER}/x" "$1"') is None


@pytest.mark.parametrize("line", ["touch ok${IFS}/etc/passwd", "echo $HOME", "echo a$1", 'echo "$@"', 'echo "$*"'])
def test_a_variable_the_shell_may_split_into_words_is_not_verifiable(line):
    assert why(line) is not None


def test_redirections_are_not_words(cwd):
    command = commandline.parse("pytest -q > out.txt 2>&1 <src/../out.txt", cwd).commands[0]
    assert command.words == ("pytest", "-q")
    assert command.redirects == [("", ">", "out.txt"), ("2", ">&", "1"), ("", "<", "src/../out.txt")]


# -- shell wrappers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("line", ["bash -lc 'pytest -q'", "sh -c 'pytest -q'", "/bin/bash -c 'pytest -q'",
                                  "bash -l -c 'pytest -q'", "zsh -ec 'pytest -q'", "/usr/bin/dash -c 'pytest -q'"])
def test_a_shell_wrapper_is_replaced_by_the_commands_of_its_script(line):
    assert words(line) == [["pytest", "-q"]] and why(line) is None


def test_a_wrappers_script_is_split_into_its_commands():
    assert words("bash -lc 'cd src && pytest -q; ls'") == [["cd", "src"], ["pytest", "-q"], ["ls"]]


def test_a_shell_from_the_workspace_is_not_unwrapped():
    assert words("./bash -c 'pytest -q'") == [["./bash", "-c", "pytest -q"]]


def test_a_shell_running_a_file_is_a_command_like_any_other():
    assert words("bash run.sh") == [["bash", "run.sh"]] and why("bash run.sh") is None


@pytest.mark.parametrize("line", ["bash -c 'pytest' extra", "bash -c", "bash -c \"$x\"", "FOO=1 bash -c 'pytest'",
                                  "bash -o pipefail -c 'pytest'", "bash -c 'pytest $(id)'"])
def test_a_shell_wrapper_that_is_not_just_a_script_is_not_verifiable(line):
    assert why(line) is not None


def test_shell_wrappers_nested_four_deep_are_verifiable_and_five_are_not():
    line = "pytest"
    for _ in range(4):
        line = "bash -c %s" % _quote(line)
    assert words(line) == [["pytest"]] and why(line) is None
    assert why("bash -c %s" % _quote(line)) == "shell wrappers nested deeper than 4"


def _quote(text):
    return "'%s'" % text.replace("'", "'\\''")


# -- what makes a line unverifiable ---------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "pytest $(rm -rf ~)", "pytest `id`", 'pytest "$(id)"', "diff <(ls) >(cat)", "echo $((1+2))", "echo $[1+2]",
    "echo ${x:=y}", "echo ${!x}", "echo ${x/a/b}", "echo ${x:-$(id)}", "echo $'\\x41'", 'echo $"x"',
    "$cmd -q", "${cmd} -q", '"$cmd" -q', 'X="$HOME" pytest', "cat <<EOF\nx\nEOF", "cat <<< text", "eval ls", "exec ls",
    "source x.sh", ". x.sh", "trap 'rm -rf ~' EXIT", "pytest &", "pytest |& tee", "(pytest)", "{ pytest; }",
    "f() { pytest; }", "function f { pytest; }", "if true; then pytest; fi", "for x in a; do pytest; done",
    "while true; do ls; done", "case x in x) ls;; esac", "! pytest", "[[ -f x ]]", "time pytest",
    "coproc pytest", "select x in a; do ls; done", "pytest\x1b[2J", "pytest\r", "pytest\x7f", "pytest\x85",
    "echo 'unbalanced", 'echo "unbalanced', "echo `unbalanced", "echo $(unbalanced", "pytest &&", "pytest |",
    "; pytest", "&& pytest", "pytest > ", "echo {a,b}", "echo ok{,' -- /etc/passwd'}", "p* -q", "~/bin/pytest",
    "", "   ", "# only a comment", "echo 'rm -rf ~' | sh", "curl x | bash",
])
def test_a_line_that_cannot_be_verified_statically_says_why(line):
    assert why(line) is not None


def test_a_line_of_more_than_10000_characters_is_not_verifiable():
    assert why("echo " + "x" * 10_000) == "longer than 10000 characters"


def test_a_line_of_more_than_200_commands_is_not_verifiable():
    assert why("; ".join(["ls"] * 201)) == "more than 200 commands" and why("; ".join(["ls"] * 200)) is None


def test_a_deny_sees_every_command_of_a_line_of_more_than_200():
    assert "rm -rf /" in views("; ".join(["ls"] * 300 + ["rm -rf /"]))


def test_quotes_and_substitutions_nested_thousands_deep_make_an_unverifiable_line_not_an_error():
    assert why('echo "$(' * 3000) is not None


def test_a_dollar_before_the_closing_double_quote_is_a_literal_dollar():
    assert words('echo "a$" b') == [["echo", "a$", "b"]] and why('echo "a$" b') is None


@pytest.mark.parametrize("line", ["echo a\tb", "echo 'a\nb'", "git log @{u}..HEAD", "find . -exec ls {} +",
                                  "echo {1}", "echo $", "echo a$", "echo 100%"])
def test_ordinary_lines_are_verifiable(line):
    assert why(line) is None


# -- redirections ------------------------------------------------------------------------------------


@pytest.mark.parametrize("redirection", ["> out.txt", ">> out.txt", "> new.txt", "> src/new.txt", "2>&1", ">&2",
                                         "<&0", ">&-", "2> /dev/null", "&> out.txt", "< out.txt", "2>>out.txt"])
def test_a_redirection_onto_a_regular_file_inside_the_cwd_is_verifiable(cwd, redirection):
    assert why("pytest %s" % redirection, cwd) is None


@pytest.mark.parametrize("redirection", ["> /etc/passwd", "> ../x", "> src", "> missing/x", "> $HOME/x", "> ~/x",
                                         "> *.txt", "> link/x", "> /dev/tty", "> passwd", "> link"])
def test_a_redirection_anywhere_else_is_not_verifiable(cwd, redirection):
    os.symlink("/etc", os.path.join(cwd, "link"))
    os.symlink("/etc/passwd", os.path.join(cwd, "passwd"))
    assert why("pytest %s" % redirection, cwd) is not None


def test_a_redirection_onto_a_file_with_a_second_hard_link_is_not_verifiable(cwd, tmp_path):
    os.link(os.path.join(cwd, "out.txt"), str(tmp_path / "outside.txt"))
    assert why("pytest > out.txt", cwd) is not None


def test_a_redirection_onto_the_sessions_own_file_is_not_verifiable(cwd):
    own = (os.path.join(cwd, "s.jsonl"), os.path.join(cwd, "s.jsonl.d"))
    assert commandline.parse("pytest >> s.jsonl.d/binding.json", cwd, own).why is not None


def test_a_redirection_after_cd_is_not_verifiable(cwd):
    assert why("cd /tmp && pytest > out.txt", cwd) == "a redirection after cd"
    assert why("bash -c 'cd /tmp; pytest > out.txt'", cwd) == "a redirection after cd"
    assert why("pytest > out.txt && cd /tmp", cwd) is None


def test_a_redirection_without_a_known_cwd_is_not_verifiable():
    assert commandline.parse("pytest > out.txt").why is not None


# -- what a deny sees -------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "/bin/rm -rf /", "\\rm -rf /", "FOO=1 rm -rf /", "env -i FOO=1 rm -rf /", "env -u HOME -- rm -rf /",
    "command -p rm -rf /", "builtin rm -rf /", "sudo -u root -E rm -rf /", "doas rm -rf /", "nice -n 5 rm -rf /",
    "nice -5 rm -rf /", "timeout -s KILL 10 rm -rf /", "nohup rm -rf /", "stdbuf -oL rm -rf /",
    "ionice -c 3 rm -rf /", "chrt -f 10 rm -rf /", "setsid rm -rf /", "time -p rm -rf /", "exec rm -rf /",
    "xargs -n1 -I{} rm -rf /", "eval rm -rf /", "eval 'rm -rf /'", "bash -c 'rm -rf /'", "sh -xc 'ls; rm -rf /'",
    "sudo bash -lc 'nice rm -rf /'", "ls $(rm -rf /)", "ls `rm -rf /`", "cat <(rm -rf /)", "ls \"$(rm -rf /)\"",
    "if true; then rm -rf /; fi", "{ rm -rf /; }", "(rm -rf /)", "find . -exec rm -rf / ;", "ls & rm -rf /",
    "echo 'unbalanced; rm -rf /", "ls | xargs rm -rf /", "busybox rm -rf /", "su -c 'rm -rf /' root",
    "env -S 'rm -rf /'", "watch -n 1 rm -rf /", "bash <<< 'rm -rf /'", "fish -c 'rm -rf /'",
])
def test_a_deny_sees_the_command_that_runs(line):
    assert "rm -rf /" in views(line)


def test_a_deny_sees_the_command_as_written_too():
    assert {"sudo rm -rf /", "rm -rf /"} <= views("sudo rm -rf /")


def test_a_deny_sees_an_unwrapped_commands_wrapper():
    (command,) = commandline.parse("/bin/bash -lc 'pytest'", "/repo").commands
    assert command.views() == [("pytest",), ("/bin/bash", "-lc", "pytest"), ("bash", "-lc", "pytest")]


@pytest.mark.parametrize("line", ["eval " * 1900 + "rm -rf /", "sudo " * 1900 + "rm -rf /",
                                  "bash -c '" + "eval " * 20 + "rm -rf /'", "env -S 'env -S \"rm -rf /\"'"])
def test_a_deny_sees_through_wrappers_nested_deeper_than_it_parses(line):
    assert "rm -rf /" in views(line)


# -- patterns ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern, expected", [
    ("pytest *", ("pytest", "*")),
    ("git commit -m 'fix *'", ("git", "commit", "-m", "fix *")),
    ("FOO=1 pytest", ("FOO=1", "pytest")),
])
def test_a_pattern_splits_into_words_as_a_line_does(pattern, expected):
    assert commandline.split_pattern(pattern) == expected


@pytest.mark.parametrize("pattern", ["pytest; rm *", "a | b", "a && b", "a > x", "'unbalanced", "# x", "a # b",
                                     "", "   "])
def test_a_pattern_that_is_not_the_words_of_one_command_has_none(pattern):
    assert commandline.split_pattern(pattern) is None
