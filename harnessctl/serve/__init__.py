"""`harnessctl serve`: the fleet and its sessions in a browser (docs/PROTOCOL.md section 24)."""
