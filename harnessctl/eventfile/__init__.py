"""The event file and its fold: locked appends, the pure fold that `status`
reads, what a well-formed line is, and the sealed snapshot of the fold kept
in the sidecar."""
