"""The safety test's store: a migrated SQLite file, or a fresh database on PostgreSQL or
MariaDB (the server of CONSOLIDATOR_TEST_PG_URL or CONSOLIDATOR_TEST_MYSQL_URL, or a
throw-away one this module starts from Debian's binaries), with what the invariants read
(the journal, the recorded host states) and the faults a store can have (another writer
holding it; the server stopped and started).

Everything is read with SQLAlchemy core and plain SQL, never with the product's code.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

#: How long one read of a SQLite store waits on its lock before on_locked, and how long
#: all tries of one read may take (past the longest hold a fault takes).
LOCKED_READ_S, READ_PATIENCE_S = 5.0, 120.0
PG_ENV = "CONSOLIDATOR_TEST_PG_URL"
MYSQL_ENV = "CONSOLIDATOR_TEST_MYSQL_URL"
_TEMPLATE: dict[str, Path] = {}
JOURNAL_COLUMNS = ("id, plan_id, action, target, params, state, created_at, started_at, "
                   "finished_at, result, lease_holder, lease_generation")


def _template_db() -> Path:
    """A migrated SQLite database, made once per process (removed at its exit) and copied
    for each world."""
    if "db" not in _TEMPLATE:
        from consolidator.store.db import make_engine, upgrade

        folder = tempfile.mkdtemp(prefix="safety-template-")
        atexit.register(shutil.rmtree, folder, True)
        path = Path(folder) / "template.db"
        engine = make_engine(f"sqlite:///{path}")
        upgrade(engine)
        engine.dispose()
        _TEMPLATE["db"] = path
    return _TEMPLATE["db"]


class Store:
    """One world's database: its URL for the product, and a reader for the invariants."""

    kind = "sqlite"

    def __init__(self, url: str, reader: Engine) -> None:
        self.url = url
        self.reader = reader
        self.locks: list[threading.Thread] = []
        #: Called when a read finds the store locked (the world resumes a paused actor).
        self.on_locked: Any = lambda: None

    def rows(self, sql: str, **params: Any) -> list[Any]:
        """The rows of one query, on a fresh connection. A read that finds the store locked
        (an actor paused inside a commit, another writer's hold) calls on_locked and tries
        again, for up to READ_PATIENCE_S."""
        deadline = time.monotonic() + READ_PATIENCE_S
        while True:
            try:
                with self.reader.connect() as conn:
                    return list(conn.execute(text(sql), params).fetchall())
            except OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                self.on_locked()

    def journal(self, since: int = 0) -> list[Any]:
        """Journal rows with an id above `since`, or still running, oldest first."""
        return self.rows(f"SELECT {JOURNAL_COLUMNS} FROM journal WHERE id > :since "
                         f"OR state = 'running' ORDER BY id", since=since)

    def leases(self) -> list[tuple[str, str, str]]:
        """Each executor lease: (name, holder, expires_at as text)."""
        return [(r[0], r[1], str(r[2])) for r in self.rows(
            "SELECT name, holder, expires_at FROM leases WHERE name LIKE 'executor:%'")]

    def host_states(self) -> dict[tuple[str, str], str]:
        """Each recorded host state, by (cloud name it was recorded under, host)."""
        return {(r[0], r[1]): r[2] for r in
                self.rows("SELECT cloud, host, state FROM host_states")}

    def busy(self) -> bool:
        """Whether a fault still holds the store."""
        self.locks = [t for t in self.locks if t.is_alive()]
        return bool(self.locks)

    def join(self) -> None:
        """Wait for the faults holding the store to end."""
        for thread in self.locks:
            thread.join()
        self.locks = []

    def close(self) -> None:
        """End the faults, drop the reader."""
        self.join()
        self.reader.dispose()

    def hold(self, seconds: float) -> str:
        """Another writer holds the whole store for this long; the fault's name."""
        raise NotImplementedError

    def _in_thread(self, body: Any) -> None:
        ready = threading.Event()

        def run() -> None:
            try:
                body(ready)
            finally:
                ready.set()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        ready.wait(60)
        self.locks.append(thread)


class SqliteStore(Store):
    """A copy of the migrated template file."""

    def __init__(self, path: Path) -> None:
        shutil.copy(_template_db(), path)
        self.path = path
        super().__init__(f"sqlite:///{path}", create_engine(
            f"sqlite:///file:{path}?mode=ro&uri=true", poolclass=NullPool,
            connect_args={"timeout": LOCKED_READ_S}))

    def hold(self, seconds: float) -> str:
        """BEGIN EXCLUSIVE on the file for this long."""
        import sqlite3

        def body(ready: threading.Event) -> None:
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            try:
                conn.execute("BEGIN EXCLUSIVE")
                ready.set()
                time.sleep(seconds)
                conn.execute("ROLLBACK")
            finally:
                conn.close()

        self._in_thread(body)
        return "database lock"


class Server:
    """A throw-away database server in a temp folder that the store fault can stop and
    start: its URL (no database named), start(), stop(), destroy()."""

    url: str
    label: str

    def start(self) -> None:
        """Start it, waiting until it accepts connections."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop it: every connection is closed."""
        raise NotImplementedError

    def destroy(self) -> None:
        """Stop it (if it runs) and remove its folder."""
        raise NotImplementedError


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgServer(Server):
    """A throw-away PostgreSQL server (initdb, pg_ctl), as .ci/run starts one."""

    label = "PostgreSQL"

    def __init__(self) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
        if not found:
            raise RuntimeError("no PostgreSQL binaries under /usr/lib/postgresql/*/bin")
        self.bin = Path(found[-1])
        self.folder = Path(tempfile.mkdtemp(prefix="safety-pg-"))
        self.data = self.folder / "data"
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_owner(["initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres"])
        self.start()
        atexit.register(self.destroy)

    def _as_owner(self, command: list[str]) -> None:
        argv = [str(self.bin / command[0]), *command[1:]]
        if os.getuid() == 0:      # PostgreSQL refuses to run as root
            shutil.chown(self.folder, "postgres")
            if self.data.exists():
                shutil.chown(self.data, "postgres")
            argv = ["runuser", "-u", "postgres", "--", *argv]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=120)

    def start(self) -> None:
        """pg_ctl start, waiting until it accepts connections."""
        self._as_owner(["pg_ctl", "-D", str(self.data), "-l", str(self.folder / "log"), "-w",
                        "-t", "60", "-o", f"-p {self.port} -k {self.folder} "
                        f"-c listen_addresses=127.0.0.1 -c fsync=off", "start"])

    def stop(self) -> None:
        """pg_ctl stop -m fast: every connection is closed."""
        self._as_owner(["pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop"])

    def destroy(self) -> None:
        """Stop it (if it runs) and remove its folder."""
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                self._as_owner(["pg_ctl", "-D", str(self.data), "-m", "immediate", "stop"])
        shutil.rmtree(self.folder, ignore_errors=True)


class MariaDbServer(Server):
    """A throw-away MariaDB server from Debian's mariadb-server (mariadb-install-db,
    mariadbd), as .ci/run starts one."""

    label = "MariaDB"

    def __init__(self) -> None:
        self.mariadbd = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        if not (Path(self.mariadbd).exists() and shutil.which("mariadb-install-db")):
            raise RuntimeError("no mariadbd or mariadb-install-db: apt-get install "
                               "mariadb-server")
        self.folder = Path(tempfile.mkdtemp(prefix="safety-mariadb-"))
        self.data = self.folder / "data"
        self.port = _free_port()
        self.url = f"mysql+pymysql://root@127.0.0.1:{self.port}/"
        self.proc: subprocess.Popen[bytes] | None = None
        subprocess.run(["mariadb-install-db", "--user=root", f"--datadir={self.data}",
                        "--auth-root-authentication-method=normal"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
        self.start()
        atexit.register(self.destroy)

    def start(self) -> None:
        """mariadbd on 127.0.0.1, waiting until it accepts connections."""
        import pymysql

        with (self.folder / "server.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [self.mariadbd, "--user=root", f"--datadir={self.data}", f"--port={self.port}",
                 f"--socket={self.folder / 'server.sock'}", "--bind-address=127.0.0.1",
                 "--skip-log-bin", "--innodb-flush-log-at-trx-commit=0"],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mariadbd ended ({self.proc.returncode}): "
                                   f"{(self.folder / 'server.log').read_text()[-2000:]}")
            try:
                pymysql.connect(host="127.0.0.1", port=self.port, user="root",
                                connect_timeout=2).close()
                return
            except pymysql.err.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM, waiting for it to end: every connection is closed."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=120)

    def destroy(self) -> None:
        """Kill it (if it runs) and remove its folder."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=120)
        shutil.rmtree(self.folder, ignore_errors=True)


class ServerStore(Store):
    """A fresh database on a database server, migrated; a Server of its own can be stopped
    and started, one named by URL only locked."""

    #: The SQL to create and to drop the database {name}.
    create_sql = ""
    drop_sql = ""

    def __init__(self, base: URL, label: str, server: Server | None) -> None:
        from consolidator.store.db import make_engine, upgrade

        self.name = f"safety_{uuid.uuid4().hex[:12]}"
        self.label = label
        self.admin = create_engine(base, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        with self.admin.connect() as conn:
            conn.execute(text(self.create_sql.format(name=self.name)))
        url = base.set(database=self.name).render_as_string(hide_password=False)
        engine = make_engine(url)
        upgrade(engine)
        engine.dispose()
        self.server = server
        super().__init__(url, create_engine(url, poolclass=NullPool,
                                            connect_args={"connect_timeout": 5}))

    def rows(self, sql: str, **params: Any) -> list[Any]:
        """As Store.rows; while the server is stopped, it waits for it to be back."""
        deadline = time.monotonic() + 120
        while True:
            try:
                return super().rows(sql, **params)
            except Exception:        # noqa: BLE001 - the server is stopped: wait for it
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def lock(self, conn: Any) -> None:
        """Lock every table the product uses, on this connection (held until it ends)."""
        raise NotImplementedError

    def hold(self, seconds: float) -> str:
        """The server stopped for this long, then started (with a server of its own); else
        every table locked for this long."""
        if self.server is not None:
            server = self.server

            def restart(ready: threading.Event) -> None:
                server.stop()
                ready.set()
                time.sleep(seconds)
                server.start()

            self._in_thread(restart)
            return f"{self.label} stopped and started"

        def lock(ready: threading.Event) -> None:
            with self.reader.connect() as conn:
                self.lock(conn)
                ready.set()
                time.sleep(seconds)

        self._in_thread(lock)
        return f"{self.label} lock"

    def close(self) -> None:
        """End the faults, drop the database."""
        super().close()
        try:
            with self.admin.connect() as conn:
                conn.execute(text(self.drop_sql.format(name=self.name)))
        finally:
            self.admin.dispose()


class PgStore(ServerStore):
    """A database on PostgreSQL."""

    kind = "postgresql"
    create_sql = 'CREATE DATABASE "{name}"'
    drop_sql = 'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'

    def __init__(self, server_url: str, server: Server | None = None) -> None:
        super().__init__(make_url(server_url).set(drivername="postgresql+psycopg"),
                         "PostgreSQL", server)

    def lock(self, conn: Any) -> None:
        """LOCK TABLE ... IN ACCESS EXCLUSIVE MODE, in a transaction the connection's end
        rolls back."""
        conn.begin()
        conn.execute(text("LOCK TABLE journal, leases, host_states IN ACCESS "
                          "EXCLUSIVE MODE"))


class MariaDbStore(ServerStore):
    """A database on MariaDB (or MySQL)."""

    kind = "mariadb"
    create_sql = "CREATE DATABASE `{name}`"
    drop_sql = "DROP DATABASE IF EXISTS `{name}`"

    def __init__(self, server_url: str, server: Server | None = None) -> None:
        super().__init__(make_url(server_url).set(drivername="mysql+pymysql", database=None),
                         "MariaDB", server)

    def lock(self, conn: Any) -> None:
        """LOCK TABLES ... WRITE on every table of the database (UNLOCK TABLES when the
        connection closes)."""
        names = [r[0] for r in conn.execute(text(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = :db"),
            {"db": self.name})]
        conn.execute(text("LOCK TABLES " + ", ".join(f"`{n}` WRITE" for n in names)))


def fault_name(kind: str, server: Server | None = None) -> str:
    """The name the store fault of a store of this kind counts under (Store.hold's)."""
    if kind == "sqlite":
        return "database lock"
    label = {"postgresql": "PostgreSQL", "mariadb": "MariaDB"}[kind]
    return f"{label} stopped and started" if server is not None else f"{label} lock"


def make_store(kind: str, folder: Path, server: Server | None = None) -> Store:
    """A store of this kind ('sqlite', 'postgresql' or 'mariadb') for one world. A server's
    kind uses the given server, else the one its environment variable names
    (CONSOLIDATOR_TEST_PG_URL, CONSOLIDATOR_TEST_MYSQL_URL)."""
    if kind == "sqlite":
        return SqliteStore(folder / "c.db")
    store, env = {"postgresql": (PgStore, PG_ENV), "mariadb": (MariaDbStore, MYSQL_ENV)}[kind]
    if server is not None:
        return store(server.url, server)
    url = os.environ.get(env)
    if not url:
        raise RuntimeError(f"--store {kind} needs {env} or a throw-away server")
    return store(url)
