"""consolidator: packs OpenStack instances onto fewer hosts and powers off the idle ones."""

__version__ = "0.1.0"
