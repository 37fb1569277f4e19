"""MariaDB and MySQL: what every connection sets, and the Galera check made when it opens.

Every session works in UTC (``time_zone = '+00:00'``): DATETIME columns hold no zone, and the
store writes and compares UTC times only. On a Galera node (``wsrep_on``) every session also
waits for causality (``wsrep_sync_wait`` with its READ, UPDATE/DELETE and INSERT/REPLACE bits):
a statement sees every write the cluster committed before it, on any node, so a lease or a
host state read on one node is never older than the write another node made. The leases'
compare-and-sets are writes (a conditional UPDATE that changes the row), which Galera's
write-set certification orders across nodes; a locking read alone is not replicated.
"""

from __future__ import annotations

from typing import Any

from consolidator.core.errors import StoreError
from consolidator.store.sessions import bound_mysql_session

#: wsrep_sync_wait's bits: READ (1), UPDATE and DELETE (2), INSERT and REPLACE (4).
SYNC_WAIT = 1 | 2 | 4


def on_connect(dbapi_conn: Any, _record: object) -> None:
    """Set a new connection's session: UTC, bounded lock waits and idle transactions
    (consolidator.store.sessions), and causal reads on a Galera node."""
    cursor = dbapi_conn.cursor()
    try:
        cursor.execute("SET time_zone = '+00:00'")
        bound_mysql_session(cursor)
        cursor.execute("SHOW VARIABLES LIKE 'wsrep_on'")
        row = cursor.fetchone()
        if row is None or str(row[1]).upper() != "ON":
            return
        cursor.execute(f"SET SESSION wsrep_sync_wait = @@wsrep_sync_wait | {SYNC_WAIT}")
        cursor.execute("SELECT @@wsrep_sync_wait")
        check_sync_wait(int(cursor.fetchone()[0]))
    finally:
        cursor.close()


def check_sync_wait(value: int) -> None:
    """Raise StoreError unless a Galera session's wsrep_sync_wait has every bit the store
    needs (the server may refuse or cap the session's setting)."""
    if value & SYNC_WAIT != SYNC_WAIT:
        raise StoreError(f"the database is a Galera node whose sessions keep "
                         f"wsrep_sync_wait={value}: consolidator needs causal reads and "
                         f"writes (wsrep_sync_wait={SYNC_WAIT} or more, bits 1, 2 and 4); "
                         f"allow it, or point [database] url at one node only")
