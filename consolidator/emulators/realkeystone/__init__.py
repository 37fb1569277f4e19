"""The real Keystone (the `keystone` package, on SQLite with fernet tokens) served on
127.0.0.1 in a process of its own, for tests: `python -m consolidator.emulators.realkeystone
--workdir DIR`. It is set up as an operator sets up a cloud for consolidator's API: the
operations team's reader, operator and admin users in one project, a service user for
keystonemiddleware, and the consolidation service in the catalog (pip install
'consolidator[realkeystone]')."""
