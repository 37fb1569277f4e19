"""The commands of the consolidation API's version 1."""
