"""Sphinx configuration: ``tox -e docs`` builds these pages with warnings as errors.

The CLI reference (cli.rst) is generated from the click commands by sphinx-click, so it is
never out of date; the version is the installed distribution's.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version

project = "consolidator"
author = "the consolidator developers"
copyright = "the consolidator developers, Apache-2.0"  # noqa: A001 - Sphinx's own name
try:
    release = installed_version("consolidator")
except PackageNotFoundError:  # built from a tree that was never installed
    release = "unknown"
version = release

extensions = ["sphinx_click"]
root_doc = "index"
source_suffix = {".rst": "restructuredtext"}
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_title = f"consolidator {release}"
# The docs quote file paths and commands in double backquotes; none is a cross-reference.
nitpicky = False
