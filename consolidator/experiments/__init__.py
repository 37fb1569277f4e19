"""Simulations that reproduce the papers' experiments (ABP of 000, UCaC of 003)."""
