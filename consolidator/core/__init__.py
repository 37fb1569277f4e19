"""The pure core: the model, constraints, the planner and its algorithms; no I/O."""
