"""The statistics the detectors rest on: calibrated on noise, accurate on planted changes."""

from __future__ import annotations

import numpy as np

from agentgrpo.doctor import stats


def test_trend_false_alarm_rate_on_noise_is_small():
    rng = np.random.default_rng(0)
    x = np.arange(120)
    hits = sum(abs(stats.trend(x, rng.normal(0, 1, 120)).t) >= 3.0 for _ in range(400))
    assert hits / 400 < 0.02


def test_trend_t_accounts_for_autocorrelated_noise():
    rng = np.random.default_rng(1)
    x = np.arange(300)
    hits = 0
    for _ in range(200):
        e = np.zeros(300)
        for i in range(1, 300):  # AR(1) noise with rho = 0.8: plain OLS would flag ~half of these
            e[i] = 0.8 * e[i - 1] + rng.normal()
        hits += abs(stats.trend(x, e).t) >= 3.0
    assert hits / 200 < 0.1


def test_ramp_finds_onset_of_a_noisy_fall():
    rng = np.random.default_rng(2)
    x = np.arange(200.0)
    y = np.where(x < 120, 1.0, np.maximum(1.0 - (x - 120) / 15, 0.05)) + rng.normal(0, 0.05, 200)
    r = stats.ramp(x, y, -1)
    assert abs(r.onset - 120) <= 10
    assert r.t < -10 and r.after < 0.2


def test_ramp_direction_filter():
    x = np.arange(50.0)
    assert stats.ramp(x, x.copy(), -1) is None
    assert stats.ramp(x, x.copy(), +1).change > 40


def test_bin_means_keeps_long_series_cheap():
    x, y = stats.bin_means(np.arange(10_000), np.ones(10_000))
    assert len(x) == stats.MAX_POINTS and np.allclose(y, 1.0)
