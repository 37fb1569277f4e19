"""--help: every option of every command, at every depth, says what it does."""

from __future__ import annotations

import click

from consolidator.cli import COMMANDS, cli


def _walk(group: click.Group, ctx: click.Context, path: str):
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, f"{path} {name}: listed but not found"
        yield f"{path} {name}", command
        if isinstance(command, click.Group):
            yield from _walk(command, click.Context(command, parent=ctx, info_name=name),
                             f"{path} {name}")


def _undocumented(command: click.Command) -> list[str]:
    return [param.opts[0] for param in command.params
            if isinstance(param, click.Option) and not (param.help or "").strip()]


def test_every_option_of_every_command_has_help() -> None:
    """Walks the whole command tree; an option without help text is listed."""
    root = click.Context(cli, info_name="consolidator")
    missing = [f"consolidator {opt}" for opt in _undocumented(cli)]
    commands = list(_walk(cli, root, "consolidator"))
    assert len(commands) > len(COMMANDS)   # the walk reached the subcommands of groups
    for path, command in commands:
        missing += [f"{path} {opt}" for opt in _undocumented(command)]
        assert (command.help or command.short_help or "").strip(), f"{path}: no help"
    assert not missing, "options without help:\n" + "\n".join(missing)


def test_the_walk_finds_an_option_without_help() -> None:
    """The check itself catches an undocumented option."""
    @click.command()
    @click.option("--quiet", is_flag=True)
    @click.option("--loud", is_flag=True, help="Shout.")
    def sample(quiet: bool, loud: bool) -> None:
        """A sample."""
    assert _undocumented(sample) == ["--quiet"]
