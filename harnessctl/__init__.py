"""harnessctl: drive coding agents with one-shot shell commands and one JSONL event file."""

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
