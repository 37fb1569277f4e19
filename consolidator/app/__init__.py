"""The use cases: what the CLI, the daemon and the demo do, each in one place.

Every use case takes an AppContext (the config, the database, the cloud connection factory,
the BMC lookup and a reporter callback) and knows nothing of click. ``snapshots`` reads the
cloud (the only code path that does) and records snapshots; ``planning`` makes plans (for
the objective, within the budget); ``power_readings`` reads the BMCs' states and watts;
``apply`` runs them through the executor; ``rollback`` prepares the plan back to a snapshot;
``hosts`` and ``power`` are the live hosts and the one guarded power path; ``settings`` is
the one module that reads the config, into each use case's typed settings.
"""
