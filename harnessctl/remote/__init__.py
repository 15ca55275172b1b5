"""Sessions on other machines: `ssh://[user@]host[:port]/path` addresses.

A session's runtime must sit beside its agent, so a command on a session
elsewhere is the same command run there, over the user's own ssh (as git,
rsync and `DOCKER_HOST=ssh://` do): no daemon, no port, no trust beyond what
the user's keys already grant.  address.py parses an address, ssh.py runs
one remote command, forward.py runs a command of this command line on a
remote session, fleet.py runs `status` and `wait --any` over many machines."""
