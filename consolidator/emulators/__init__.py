"""The fake cloud and BMCs, and the real-Nova backend, for tests and the demo."""
