"""The one cleaner of everything harnessctl prints (docs/PROTOCOL-COMMANDS.md section 16).

Text from the event file is the agent's: a control character in it could
move the cursor, retitle the terminal or set the clipboard (OSC 52), a bidi
override or a zero-width character could make a line read as something it is
not, and a newline could forge a whole transcript line.  So every character
of Unicode categories Cc, Cf, Zl, Zp and Cs (C0 and C1 controls, DEL, bidi
embeddings, overrides and isolates, zero-width characters, line and paragraph
separators, lone surrogates) is shown escaped, never written as it is:

- `shown(text)` for text a person reads: `\\x1b`, `\\u202e`, `\\U000e0001`;
  with `lines=True` newlines and tabs stay (a message's own lines);
- `json_shown(text)` for a line of JSON: the same characters as JSON escapes
  (`\\u202e`), so the line parses to the same value.

Both look first whether there is anything to do (`str.isprintable`, in C):
an ordinary line costs no import and no copy.
"""

from __future__ import annotations

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Dict, Match, Pattern

# Every code point of the categories Cc, Cf, Zl, Zp and Cs (Unicode 15), as a
# regular expression class: what a terminal may obey or that hides text.
UNSAFE = ("\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
          "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
          "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
_patterns: Dict[str, Pattern[str]] = {}


def _pattern(keep: str) -> Pattern[str]:
    """The unsafe characters but those in `keep` (compiled once, on first need)."""
    pattern = _patterns.get(keep)
    if pattern is None:
        import re

        pattern = _patterns[keep] = re.compile("(?![%s])[%s]" % (keep, UNSAFE) if keep else "[%s]" % UNSAFE)
    return pattern


def shown(text: str, lines: bool = False) -> str:
    """`text` with its unsafe characters escaped (`\\x1b`); with `lines`, its
    newlines and tabs kept."""
    if text.isprintable():
        return text
    return _pattern("\n\t" if lines else "").sub(_escape, text)


def _escape(match: Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return "\\x%02x" % code
    return "\\u%04x" % code if code < 0x10000 else "\\U%08x" % code


def json_shown(line: str) -> str:
    """A JSON line with its unsafe characters written as JSON escapes: the
    same value, nothing a terminal obeys.  (json.dumps escapes C0 already.)"""
    if line.isprintable():
        return line
    return _pattern("").sub(_json_escape, line)


def _json_escape(match: Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return "\\u%04x" % code
    code -= 0x10000
    return "\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))
