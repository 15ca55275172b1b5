"""A file's log entries, read on as it grows: what `log --follow` folds
(printer.py), for a reader that draws them itself (serve's page).  Where
the file names a new or shorter one, the reading starts over, as `log
--follow` reads it again."""

from __future__ import annotations

import os

from ..store.address import resolve
from .printer import Printer
from .render import Style
from .show import open_log
from .transcript import Transcript
from .window import window

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Dict, List, Optional, Tuple

    Entry = Dict[str, Any]
    Entries = List[Tuple[str, Entry]]  # (its key, the entry), in the order `log` shows them


class Reader:
    """One local event file's entries: its window first, then the entries
    new or changed since."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.f: Optional[BinaryIO] = None
        self.printer = self._printer()
        self.offset = 0

    def _printer(self) -> Printer:
        return Printer(Transcript(), Style(False, self.file), False, out=lambda text: None)

    def close(self) -> None:
        if self.f is not None:
            self.f.close()

    def start(self) -> Entries:
        """The entries `log FILE` shows now (its window of the file)."""
        self.f = open_log(resolve(self.file))
        start = window(self.f, os.fstat(self.f.fileno()).st_size, None, None)
        self.offset = self.printer.feed(self.f, start)
        return self._shown(list(self.printer.transcript.entries))

    def more(self) -> Tuple[bool, Entries]:
        """(whether the reading started over, the entries new or changed since)."""
        assert self.f is not None
        try:
            st = os.stat(self.file)
        except OSError:
            return False, []  # gone for now (being replaced): look again at the next change
        fst = os.fstat(self.f.fileno())
        if (st.st_dev, st.st_ino) != (fst.st_dev, fst.st_ino) or st.st_size < self.offset:
            self.close()
            self.printer, self.offset = self._printer(), 0
            return True, self.start()
        keys: List[str] = []
        self.offset = self.printer.feed(self.f, self.offset, keys)
        transcript = self.printer.transcript
        return False, self._shown([k for k in keys if transcript.settled(transcript.entries[k])])

    def _shown(self, keys: List[str]) -> Entries:
        transcript = self.printer.transcript
        found = [(key, transcript.entries[key]) for key in self.printer.grouped(list(dict.fromkeys(keys)))]
        return [(key, entry) for key, entry in found if transcript.shown(entry)]
