"""The real-Keystone server: deploy Keystone in a work directory, serve it on 127.0.0.1,
provision it, write clouds.yaml and ready.json, and serve until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

import yaml

from consolidator.emulators.realkeystone import deploy, provision

LOG = logging.getLogger(__name__)
READY = "ready.json"
CLOUDS = "clouds.yaml"


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        """No access log on stderr (Keystone logs each request to its own file)."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The server's options."""
    parser = argparse.ArgumentParser(prog="python -m consolidator.emulators.realkeystone",
                                     description=__doc__)
    parser.add_argument("--workdir", required=True, type=Path,
                        help="Keystone's config, SQLite database, keys and log go here; "
                             "clouds.yaml and ready.json are written here once it serves")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any)")
    parser.add_argument("--token-expiration", type=int, default=3600,
                        help="[token] expiration: seconds a token lasts")
    parser.add_argument("--api-url", default=None,
                        help="the consolidation endpoint's URL [default: "
                             "http://127.0.0.1:PORT on a port free now]")
    return parser.parse_args(argv)


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def run(args: argparse.Namespace, echo: Callable[[str], None]) -> int:
    """Deploy, serve, provision; serve until a signal. 0 on a clean stop, 1 if start-up
    failed (the reason in one line, the details in keystone.log)."""
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: stopping.set())
    args.workdir.mkdir(parents=True, exist_ok=True)
    layout = deploy.Layout(args.workdir.resolve())
    began = time.monotonic()
    phases: dict[str, float] = {}

    def lap(name: str) -> None:
        phases[name] = round(time.monotonic() - began - sum(phases.values()), 1)

    server: _Server | None = None
    try:
        deploy.write_config(layout, args.token_expiration)
        server = _Server(("127.0.0.1", args.port), _Quiet)
        base = f"http://127.0.0.1:{server.server_address[1]}"
        deploy.manage(layout, base)
        lap("manage_s")          # importing Keystone, db_sync, keys, bootstrap
        server.set_app(deploy.application(layout))
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                         name="keystone-http", daemon=True).start()
        lap("application_s")
        auth_url = f"{base}/v3"
        api_url = args.api_url or f"http://127.0.0.1:{free_port()}"
        made = provision.provision(auth_url, api_url)
        lap("provision_s")
        clouds_yaml = layout.workdir / CLOUDS
        write_atomically(clouds_yaml, yaml.safe_dump({"clouds": provision.clouds(auth_url)},
                                                     sort_keys=False))
        ready = {"auth_url": auth_url, "api_url": api_url, "clouds_yaml": str(clouds_yaml),
                 "log_file": str(layout.log), "project_id": made.project_id,
                 "user_ids": made.user_ids, "token_expiration_s": args.token_expiration,
                 "started_in_s": round(time.monotonic() - began, 1), "phases": phases}
        write_atomically(layout.workdir / READY, json.dumps(ready, indent=2))
        echo(f"real Keystone listening: auth URL {auth_url} (ready in "
             f"{ready['started_in_s']} s); wrote {clouds_yaml}")
    except Exception as exc:  # noqa: BLE001 - one line here, the details in the log
        LOG.exception("real Keystone failed to start")
        echo(f"real Keystone failed: {type(exc).__name__}: {exc} (see {layout.log})")
        if server is not None:
            server.server_close()
        return 1
    stopping.wait()
    server.shutdown()
    server.server_close()
    echo("real Keystone stopped")
    return 0
