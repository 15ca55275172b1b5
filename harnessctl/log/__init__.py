"""`harnessctl log`: which lines to read, the transcript entries folded from
them, and the text a person reads."""
