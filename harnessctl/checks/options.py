"""A wrapper's options as getopt reads them, so that what `env`, `sudo`,
`su` and the like run is found however their options are spelt: short
options combined (`-iS STRING`, `-uroot`), long ones abbreviated or given
`=VALUE`, options after the operands where the wrapper permutes them.  An
option the wrapper does not take is noted: what then runs is a guess, and
the line is not verifiable (wrappers.py)."""

from __future__ import annotations

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple

    Option = Tuple[str, str, int]  # (letter or long name, value, index of the word after it)
    Read = Tuple[List[Option], List[str], Optional[str]]  # (options, operands, why it is a guess)


class Options:
    """The options one wrapper takes: `flags` the letters without a value,
    `valued` those with one (`-uNAME` or `-u NAME`), `longs` each long name
    and its value ("=" required, "?" only after `=`, "" none), `permute`
    whether options may follow the operands (GNU getopt without `+`)."""

    __slots__ = ("flags", "valued", "longs", "permute")

    def __init__(self, flags: str, valued: str, longs: Dict[str, str], permute: bool = False) -> None:
        self.flags, self.valued, self.longs, self.permute = flags, valued, longs, permute


def read(words: List[str], spec: Options) -> Read:
    """(each option as (name, value, index after it), the operands, the
    first option that could not be read or None).  An unknown option is
    taken for a flag, and reading goes on."""
    options: List[Option] = []
    operands: List[str] = []
    why: Optional[str] = None
    k = 0
    while k < len(words):
        word = words[k]
        k += 1
        if word == "--":
            return options, operands + words[k:], why
        if not word.startswith("-") or word == "-":
            if not spec.permute:
                return options, operands + words[k - 1:], why
            operands.append(word)
            continue
        k, problem = (_long if word.startswith("--") else _short)(words, k, spec, options)
        why = why or problem
    return options, operands, why


def _long(words: List[str], k: int, spec: Options, options: List[Option]) -> Tuple[int, Optional[str]]:
    """`--name`, `--name=VALUE`, `--name VALUE`, or a unique abbreviation of
    the name (getopt_long takes `--split` for `--split-string`)."""
    name, eq, value = words[k - 1][2:].partition("=")
    known = [full for full in spec.longs if full.startswith(name)]
    full = name if name in spec.longs else known[0] if len(known) == 1 else None
    if full is None:
        return k, "an option harnessctl does not read (%s)" % words[k - 1]
    takes = spec.longs[full]
    if takes == "=" and not eq:
        if k >= len(words):
            return k, "no value after --%s" % full
        value, k = words[k], k + 1
    elif not takes and eq:
        return k, "a value given to --%s" % full
    options.append((full, value, k))
    return k, None


def _short(words: List[str], k: int, spec: Options, options: List[Option]) -> Tuple[int, Optional[str]]:
    """`-abc` flags, and a letter that takes a value: the rest of the word
    (`-uroot`, `-iSrm`) or else the next word."""
    word, why = words[k - 1], None
    for at in range(1, len(word)):
        letter = word[at]
        if letter in spec.valued:
            value = word[at + 1:]
            if not value:
                if k >= len(words):
                    return k, "no value after -%s" % letter
                value, k = words[k], k + 1
            options.append((letter, value, k))
            return k, why
        if letter not in spec.flags:
            why = why or "an option harnessctl does not read (-%s)" % letter
        options.append((letter, "", k))
    return k, why
