"""One vocabulary of failure modes: detectors, live doctor, config, CLI and labels read the same enum."""

from __future__ import annotations

import warnings

import pytest

from agentgrpo.doctor import detectors
from agentgrpo.doctor.live import LiveDoctorCallback
from agentgrpo.doctor.modes import ALIASES, MODES, Mode, resolve


def test_detectors_are_the_modes_in_order():
    assert detectors.NAMES == MODES == tuple(m.value for m in Mode)
    assert all(isinstance(d.NAME, Mode) for d in detectors.DETECTORS)


def test_zero_variance_is_not_called_signal():
    assert "signal" not in MODES and Mode.ZERO_VARIANCE == "zero_variance"


def test_old_name_signal_still_resolves_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="'signal' is deprecated; use 'zero_variance'"):
        assert resolve("signal") == "zero_variance"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve("zero_variance") == resolve("no_signal") == resolve("Zero-Variance") == "zero_variance"


def test_every_alias_names_a_mode_and_unknown_names_fail_with_the_choices():
    assert all(str(target) in MODES for target in ALIASES.values())
    with pytest.raises(ValueError, match="choose from instability, kl"):
        resolve("explosion")


def test_live_doctor_stop_on_reads_the_same_vocabulary():
    cb = LiveDoctorCallback(stop_on=["zero_variance", "length_gaming"])
    assert cb.stop_on == {"zero_variance", "length"}
    with pytest.warns(DeprecationWarning):
        assert LiveDoctorCallback(stop_on=["signal"]).stop_on == {"zero_variance"}


def test_config_check_accepts_the_modes_and_the_old_name():
    from agentgrpo.checks import check_stop_on as _check_stop_on

    assert _check_stop_on(list(MODES)) == []
    with pytest.warns(DeprecationWarning):
        assert _check_stop_on(["signal"]) == []
    assert "unknown failure mode" in _check_stop_on(["explosion"])[0]
