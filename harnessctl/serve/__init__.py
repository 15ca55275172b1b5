"""`harnessctl serve`: the fleet and its sessions in a browser (docs/PROTOCOL-SERVE.md section 24)."""
