"""A prior for the deviation of an instance measured over too few samples.

A standard deviation over one sample is 0, and over a handful it is mostly noise: an instance
that telemetry has only just begun to record (a fresh Prometheus, a new instance, or the first
cycle of a replayed day) would be packed as if its usage never moved. Until its window holds
``min_samples`` samples, an instance's deviation is taken as at least its mean, the
coefficient of variation of 1 that a bursty instance shows, and UCaC's chance constraint
(paper 003) reserves room for it accordingly.
"""

from __future__ import annotations

import numpy as np


def short_window_std(mean: np.ndarray, std: np.ndarray, samples: np.ndarray,
                     min_samples: int) -> np.ndarray:
    """Each instance's deviation: its own where its window holds at least min_samples
    samples (or min_samples <= 0: no prior), else the larger of its own and its mean."""
    std = np.asarray(std, dtype=float)
    if min_samples <= 0:
        return std
    prior = np.maximum(std, np.asarray(mean, dtype=float))
    return np.where(np.asarray(samples) < min_samples, prior, std)
