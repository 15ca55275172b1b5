"""`python -m harnessctl`."""

from .cli import entry

entry()
