"""The deviation prior for instances measured over too few samples (core/short_window.py)."""

from __future__ import annotations

import numpy as np

from consolidator.core.short_window import short_window_std


def test_an_instance_with_too_few_samples_gets_at_least_its_mean_as_deviation() -> None:
    mean = np.array([2.0, 2.0, 0.5, 1.0])
    std = np.array([0.0, 3.0, 0.1, 0.2])
    samples = np.array([1, 1, 11, 12])
    got = short_window_std(mean, std, samples, 12)
    # One sample: 0 becomes the mean; a deviation above the mean stays; eleven samples are
    # still short; twelve are enough and keep their own.
    assert got.tolist() == [2.0, 3.0, 0.5, 0.2]


def test_no_prior_when_min_samples_is_zero() -> None:
    std = np.array([0.0, 0.3])
    got = short_window_std(np.array([1.0, 1.0]), std, np.array([0, 1]), 0)
    assert got.tolist() == [0.0, 0.3]
