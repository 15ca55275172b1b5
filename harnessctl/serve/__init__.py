"""`harnessctl serve`: the fleet and its sessions in a browser (docs/SERVE.md)."""
