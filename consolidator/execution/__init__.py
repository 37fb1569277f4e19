"""Carrying plans out: the executor, the move queue, resume, the guarded power path and the
simulated cloud of dry runs."""
