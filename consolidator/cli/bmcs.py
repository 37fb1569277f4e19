"""consolidator bmc-check: every BMC's system identity and power, against Nova."""

from __future__ import annotations

import json

import click

from consolidator.app.bmc_check import check_bmcs
from consolidator.app.context import AppContext
from consolidator.cli.context import BMC_FILE, FORMAT, pass_app, terminal_width
from consolidator.core.errors import ConsolidatorError
from consolidator.core.wording import agree, plural
from consolidator.render.fit import fit_table


class BmcDisagreement(ConsolidatorError):
    """At least one BMC failed, reaches the wrong system, or disagrees with Nova."""


@click.command("bmc-check")
@BMC_FILE
@FORMAT
@pass_app
def bmc_check_cmd(app: AppContext, bmc_file: str | None, fmt: str) -> None:
    """Read every BMC: its system's identity and power, and whether Nova agrees.

    For each compute host: the identity its BMC reports (Redfish UUID, SerialNumber and
    HostName; IPMI system GUID: put it in bmc.yaml as system_uuid, system_serial,
    system_hostname or system_guid to have it checked before every power action), its
    power, and nova-compute's state. A host agrees when its BMC reads on exactly when
    nova-compute reports up, and its entry reaches its own system. Exits 1 if any does not.
    """
    app.bmc_file = bmc_file
    checks = check_bmcs(app)
    if fmt == "json":
        click.echo(json.dumps([c.as_dict() for c in checks], indent=2))
    else:
        click.echo(fit_table(["HOST", "DRIVER", "POWER", "NOVA", "AGREES", "IDENTITY",
                              "PROBLEM"], [
            [c.host, c.driver, c.power, c.nova,
             "-" if c.agrees is None else "yes" if c.agrees else "NO",
             " ".join(f"{k}={v}" for k, v in sorted(c.identity.items())) or "-",
             c.problem or ("" if c.agrees is not False else "BMC and Nova disagree")]
            for c in checks], "lllllll", terminal_width(), wraps={5: 16, 6: 16}))
    bad = [c.host for c in checks if c.agrees is False]
    if bad:
        raise BmcDisagreement(f"{plural(len(bad), 'host')} {agree(len(bad), 'does', 'do')} "
                              f"not agree: {', '.join(bad)}")
