#!/usr/bin/env python3
"""Flips FOLDER between a real directory and a symlink to TARGET as fast as it
can for SECONDS, then prints how many times it flipped and exits: the attacker
of the file channel's race tests (issue 32: an agent swaps a folder of its cwd
for a symlink between harnessctl's check and its open).

A separate process, so it runs truly beside the file channel (a thread would
wait for the GIL).  The real directory is parked at FOLDER.parked while the
link stands; a folder the file channel makes in the moment FOLDER is missing
is moved aside (FOLDER.junkN) so the flipping never stalls.

Usage: flipper.py FOLDER TARGET SECONDS"""

from __future__ import annotations

import os
import sys
import time


def to_link(folder: str, target: str, parked: str, junk: str) -> None:
    try:
        os.rename(folder, parked)
    except FileNotFoundError:
        pass
    except OSError:  # parked is taken: this folder is one the file channel made
        os.rename(folder, junk)
    os.symlink(target, folder)


def to_dir(folder: str, parked: str) -> None:
    os.unlink(folder)
    os.rename(parked, folder)


def main(folder: str, target: str, seconds: float) -> int:
    parked = folder + ".parked"
    os.makedirs(folder, exist_ok=True)
    flips, rounds, end = 0, 0, time.monotonic() + seconds
    while time.monotonic() < end:
        rounds += 1  # a new name for each folder moved aside, even in a round that failed
        try:
            to_link(folder, target, parked, "%s.junk%d" % (folder, rounds))
            flips += 1
            to_dir(folder, parked)
            flips += 1
        except OSError:  # the file channel made the folder in a moment it was missing: on with the next round
            pass
    try:  # leave a real directory behind
        to_dir(folder, parked)
    except OSError:
        pass
    print(flips)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
