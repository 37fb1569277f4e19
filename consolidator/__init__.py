"""consolidator: packs OpenStack instances onto fewer hosts and powers off the idle ones."""

from importlib.metadata import PackageNotFoundError, version

try:
    #: The installed distribution's version: setup.cfg's, the one place it is written.
    __version__ = version("consolidator")
except PackageNotFoundError:  # a source tree run without installing it
    __version__ = "0+unknown"
