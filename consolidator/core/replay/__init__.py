"""The trace replay's pure model: data centre, power, the metrics, the reference policies."""
