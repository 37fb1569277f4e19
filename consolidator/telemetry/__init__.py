"""Prometheus: usage reads and the metrics exporter."""
