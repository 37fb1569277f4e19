"""consolidator api: serve the HTTP API (Keystone tokens, oslo.policy) for development;
production runs consolidator.api.wsgi:make_application under a WSGI server."""

from __future__ import annotations

import importlib

import click

from consolidator.app.context import AppContext
from consolidator.cli.context import pass_app
from consolidator.core.errors import UsageError

#: The modules the API needs, all from the 'api' extra.
NEEDED = ("flask", "keystonemiddleware", "oslo_policy", "oslo_config", "oslo_context",
          "waitress")


def missing_modules() -> list[str]:
    """The API's modules this install lacks (or cannot import)."""
    missing = []
    for module in NEEDED:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    return missing


@click.command("api")
@click.option("--port", type=click.IntRange(0, 65535), metavar="N",
              help="TCP port; 0: any free one [default: [api] port, 8779].")
@click.option("--host", metavar="ADDRESS",
              help="Address to listen on [default: [api] bind, 127.0.0.1].")
@pass_app
def api_cmd(app: AppContext, port: int | None, host: str | None) -> None:
    """Serve the HTTP API: Keystone tokens, oslo.policy rules, jobs for the daemon.

    It serves with waitress; every token is validated by keystonemiddleware against the
    cloud's Keystone ([api] service_cloud, else --cloud), every call checked by oslo.policy
    ([oslo_policy]); work on the cloud becomes a job for the daemon.

    Needs the 'api' extra: pip install 'consolidator[api]'. For production, run
    consolidator.api.wsgi:make_application under a WSGI server behind a TLS proxy
    (docs/api.rst, 'consolidator config sample consolidator-api.service').
    """
    missing = missing_modules()
    if missing:
        raise UsageError(f"consolidator api needs the 'api' extra, and {', '.join(missing)} "
                         f"is missing: pip install 'consolidator[api]'")
    import logging

    import waitress

    from consolidator.api.wsgi import make_app
    from consolidator.app.settings import api_settings

    settings = api_settings(app.config)
    application = make_app(app)
    bind = host or settings.bind
    listen = settings.port if port is None else port
    logging.getLogger("consolidator.api").setLevel(logging.INFO)
    try:
        server = waitress.create_server(application, host=bind, port=listen,
                                        threads=settings.threads, ident="consolidator")
    except OSError as exc:
        raise UsageError(f"cannot listen on {bind}:{listen}: {exc.strerror or exc}: choose "
                         f"another --port or --host") from None
    click.echo(f"consolidator API for cloud {app.cloud_name!r} on "
               f"http://{bind}:{server.effective_port}/ (Ctrl-C stops it)", err=True)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
