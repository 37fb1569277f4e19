"""consolidator demo: the whole product on the bundled fake cloud, in one command."""

from __future__ import annotations

import click

from consolidator.app.catalog import check_names
from consolidator.app.context import AppContext
from consolidator.cli.context import pass_app, terminal_width
from consolidator.demo import DemoOptions, run_demo


@click.command("demo")
@click.option("-a", "--algorithm", metavar="NAME",
              help="Packing algorithm (see 'consolidator algorithms') [default: "
                   "zoned-bestfit].")
@click.option("-r", "--ranking", metavar="NAME",
              help="Ranking that chooses among feasible targets [default: the algorithm's own].")
@click.option("--keep", is_flag=True,
              help="Keep the temporary directory (database, clouds.yaml, bmc.yaml, config) "
                   "and print where it is.")
@click.option("--backend", type=click.Choice(["fake", "nova"]), default="fake",
              show_default=True,
              help="The cloud to tell the story on: the project's fast fake, or the real Nova "
                   "and Placement (pip install 'consolidator[realnova]'; about two minutes).")
@pass_app
def demo_cmd(app: AppContext, algorithm: str | None, ranking: str | None, keep: bool,
             backend: str) -> None:
    """Run the whole story on a fake cloud with emulated BMCs, verifying every step.

    It serves the bundled 11-host scenario (Keystone, Nova, Placement, IPMI and Redfish BMCs
    on 127.0.0.1) from a child process, then snapshots, plans, approves, applies, powers the
    emptied hosts off, lists the hosts, rolls back and checks that every instance is home.
    It uses a temporary SQLite database unless --db-url (or CONSOLIDATOR_DB_URL) is given;
    it never touches a real cloud. Exit 0 only if every step verified.
    """
    check_names(algorithm, ranking)
    seconds = run_demo(DemoOptions(algorithm=algorithm, ranking=ranking, keep=keep,
                                   db_url=app.db_url, backend=backend,
                                   width=terminal_width()), click.echo)
    click.echo(f"\ndemo verified: every step passed in {seconds:.1f} s")
