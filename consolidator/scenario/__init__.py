"""Scenario files: the loader, the YAML reader and the parsed-file cache."""
