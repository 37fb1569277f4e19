"""The files the package ships for deploying it: the sample config and bmc.yaml, the systemd
unit and the Prometheus rules, kept in consolidator/deploy/ and installed with the wheel."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from consolidator.core.errors import UsageError

#: Where they live, in the source tree and in an installed package alike.
DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
#: The one `consolidator config sample` prints when no name is given.
DEFAULT = "consolidator.conf"
#: What each is for, where the file's own first line does not say it well.
PURPOSE = {
    "consolidator.conf": "the INI config, every option with its default: copy to "
                         "/etc/consolidator/consolidator.conf",
    "bmc.yaml": "BMC credentials, one entry per compute host: copy to "
                "/etc/consolidator/bmc.yaml, chmod 600",
    "consolidator.service": "the systemd unit of the daemon: copy to /etc/systemd/system/",
    "consolidator-api.service": "the systemd unit of the HTTP API (waitress): copy to "
                                "/etc/systemd/system/",
    "prometheus/recording-rules.yml": "Prometheus recording rules: a libvirt exporter's CPU "
                                      "counters as the per-instance usage consolidator reads",
}


@dataclass(frozen=True)
class ShippedFile:
    """One shipped file: the name to ask for, its installed path and what it is for."""

    name: str
    path: Path
    purpose: str

    def text(self) -> str:
        """The file's content."""
        return self.path.read_text(encoding="utf-8")


def _name(path: Path) -> str:
    """The name a file is asked for by: its path under deploy/, without '.sample'."""
    relative = path.relative_to(DEPLOY).as_posix()
    return relative.removesuffix(".sample")


def _purpose(name: str, path: Path) -> str:
    """PURPOSE's words, else the first sentence of the file's opening comment."""
    if name in PURPOSE:
        return PURPOSE[name]
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.strip("# ")
        if not line.startswith("#") or (words and not text):
            break
        words += text.split()
        sentence = " ".join(words)
        if ". " in sentence or sentence.endswith("."):
            return sentence.split(". ")[0].rstrip(".")
    return " ".join(words)


def shipped_files() -> list[ShippedFile]:
    """Every shipped file, by name."""
    paths = sorted(p for p in DEPLOY.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return [ShippedFile(_name(p), p, _purpose(_name(p), p)) for p in paths]


def shipped_file(name: str = DEFAULT) -> ShippedFile:
    """The shipped file of that name (its path under deploy/, or its file name alone when
    that is unique); UsageError naming the choices."""
    files = shipped_files()
    matches = [f for f in files if name in (f.name, f.path.name)] or \
              [f for f in files if f.name.rsplit("/", 1)[-1] == name]
    if len(matches) == 1:
        return matches[0]
    choices = ", ".join(f.name for f in files)
    raise UsageError(f"no shipped file {name!r}: choose among {choices}")
