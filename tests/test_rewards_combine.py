"""Registry, combination, shadow rewards and 'failures are data'."""

import warnings

import pytest

from agentgrpo.errors import ConfigError, UserError
from agentgrpo.rewards import (
    REWARDS,
    RewardFailureWarning,
    RewardOutputError,
    build_rewards,
    get_reward,
)
from agentgrpo.rewards.guard import GuardedReward


# user reward functions imported by "module:attr" in the tests below
def flaky(completions, **kwargs):
    """Raises on completions containing 'boom'."""
    if any("boom" in c for c in completions):
        raise RuntimeError("boom seen")
    return [1.0 for _ in completions]


def length_factory(scale=1.0):
    def scaled_length(completions, **kwargs):
        return [scale * len(c) for c in completions]

    return scaled_length


class Metrics:
    """Collects what a reward logs through TRL's log_metric / log_extra kwargs."""

    def __init__(self):
        self.metrics, self.extra = [], []

    def log_metric(self, name, value):
        self.metrics.append((name, value))

    def log_extra(self, column, values):
        self.extra.append((column, list(values)))


# --- registry --------------------------------------------------------------------------------------------


def test_every_builtin_is_named_after_its_registry_key():
    needs = {
        "overlong_penalty": {"max_length": 10, "cache": 5},
        "length_budget": {"budget": 10},
        "json_schema": {"schema": {"type": "object"}},
    }
    for name, _ in REWARDS.items():
        assert get_reward(name, **needs.get(name, {})).__name__ == name


def test_unknown_name_suggests_close_matches():
    with pytest.raises(UserError, match=r"unknown reward 'exact_anwser'\. Did you mean 'exact_answer'"):
        get_reward("exact_anwser")


def test_unknown_param_names_the_reward_and_its_params():
    with pytest.raises(UserError, match=r"unknown parameter 'tolerance' of reward 'numeric_answer'.*rel_tol"):
        get_reward("numeric_answer", tolerance=0.1)


def test_module_attr_imports_a_function_or_calls_a_factory():
    assert get_reward(f"{__name__}:flaky")(["a"]) == [1.0]
    assert get_reward(f"{__name__}:length_factory", scale=2.0)(["abc"]) == [6.0]
    with pytest.raises(UserError, match="cannot import"):
        get_reward("no_such_module_xyz:f")
    with pytest.raises(UserError, match="not a function"):
        get_reward(f"{__name__}:REWARDS")


# --- build_rewards ---------------------------------------------------------------------------------------


def test_build_rewards_weights_shadows_and_order():
    rs = build_rewards(
        [
            {"name": "tool_call_count", "weight": 0},
            "exact_answer",
            {"name": "numeric_answer", "weight": 0.5, "params": {"rel_tol": 0.01}},
        ]
    )
    # trained rewards first, shadows last; names match TRL's rewards/<name>/... keys
    assert rs.names == ["exact_answer", "numeric_answer", "tool_call_count"]
    assert rs.weights == [1.0, 0.5, 0.0]
    assert rs.shadow_names == ["tool_call_count"] and rs.trained_names == ["exact_answer", "numeric_answer"]
    assert [f.__name__ for f in rs.funcs] == rs.names


def test_build_rewards_reports_every_problem_at_once():
    with pytest.raises(ConfigError) as err:
        build_rewards(
            [
                "exact_anwser",
                {"name": "numeric_answer", "weight": "heavy"},
                {"name": "tool_success", "params": {"nope": 1}},
                {"name": "json_valid", "colour": "red"},
                42,
                "exact_answer",
                "exact_answer",
            ]
        )
    text = str(err.value)
    assert len(err.value.problems) == 6, text
    for needle in (
        "Did you mean 'exact_answer'",
        "weight must be a finite number",
        "tool_success",
        "unknown keys ['colour']",
        "42 is not a name",
        "appears twice",
    ):
        assert needle in text


@pytest.mark.parametrize(
    "specs,weights,needle",
    [
        (["exact_answer", "tool_success"], [1.0], "1 weights for 2 rewards"),  # too few weights
        (["exact_answer"], [1.0, 2.0], "2 weights for 1 rewards"),  # too many
        ([{"name": "exact_answer", "weight": 1}], [1.0], "both in the spec and in weights"),  # given twice
        ([{"name": "exact_answer", "weight": 0}], None, "every weight is 0"),  # nothing to train on
        ([], None, "non-empty list"),  # no rewards at all
        ([{"name": "exact_answer", "weight": float("nan")}], None, "finite number"),  # NaN weight
    ],
)
def test_build_rewards_bad_weights(specs, weights, needle):
    with pytest.raises(ConfigError, match=needle):
        build_rewards(specs, weights=weights)


def test_alias_allows_the_same_reward_twice():
    rs = build_rewards(
        [
            {"name": "numeric_answer"},
            {"name": "numeric_answer", "alias": "numeric_loose", "params": {"rel_tol": 0.1}, "weight": 0},
        ]
    )
    assert rs.names == ["numeric_answer", "numeric_loose"]
    out = rs.score(["The answer is 83"], answer=["84"])
    assert out["numeric_answer"] == [0.0] and out["numeric_loose"] == [1.0] and out["total"] == [0.0]


def test_shadow_reward_is_logged_but_never_trained_on():
    rs = build_rewards([{"name": "exact_answer", "weight": 1.0}, {"name": "numeric_answer", "weight": 0.0}])
    out = rs.score(["The answer is 84", "The answer is 084", "no"], answer=["84", "84", None])
    # the shadow reward sees the true objective (084 == 84) ...
    assert out["numeric_answer"][:2] == [1.0, 1.0]
    # ... but the total the policy is trained on is the proxy alone
    assert out["total"][:2] == [1.0, 0.0]
    # a row every trained reward skipped stays unscorable: the shadow does not make it a 0
    assert out["exact_answer"][2] is None and out["numeric_answer"][2] is None and out["total"][2] is None


# --- failures are data -----------------------------------------------------------------------------------


def test_a_raising_reward_gives_none_for_failed_samples_counts_and_warns_once():
    rs = build_rewards([f"{__name__}:flaky"])
    guarded, log = rs.funcs[0], Metrics()
    with pytest.warns(RewardFailureWarning, match=r"(?s)'flaky' raised RuntimeError: boom seen.*Traceback"):
        out = guarded(["ok", "boom", "fine"], log_metric=log.log_metric)
    assert out == [1.0, None, 1.0]  # only the failing sample is None, never a silent 0
    assert log.metrics == [("rewards/flaky/errors", 1.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second failure does not warn again
        assert guarded(["boom", "boom"], log_metric=log.log_metric) == [None, None]
    assert log.metrics[-1] == ("rewards/flaky/errors", 2.0) and guarded.errors_total == 3
    # a clean batch logs 0 errors, so the metric is a continuous series
    guarded(["ok"], log_metric=log.log_metric)
    assert log.metrics[-1] == ("rewards/flaky/errors", 0.0)


def test_strict_mode_fails_the_run_naming_the_function():
    rs = build_rewards([f"{__name__}:flaky"], strict=True)
    with pytest.raises(RuntimeError, match="boom seen") as err:
        rs.funcs[0](["boom"])
    assert "flaky" in "".join(err.value.__notes__)


@pytest.mark.parametrize(
    "output,needle",
    [
        ([1.0], "returned 1 values for 2 completions"),  # wrong length
        (["1.0", 0.5], r"returned '1.0' \(str\) for completion 0"),  # a string
        ([True, 0.5], r"returned True \(bool\)"),  # a bool
        ([float("nan"), 0.5], "must be finite"),  # NaN
        (0.5, "returned a float"),  # not a list
    ],
)
def test_bad_output_is_a_clear_error_naming_the_function(output, needle):
    def bad_reward(completions, **kwargs):
        return output

    with pytest.raises(RewardOutputError, match=needle) as err:
        GuardedReward(bad_reward)(["a", "b"])
    assert "'bad_reward'" in str(err.value)


def test_a_config_problem_stops_the_run_instead_of_scoring_none():
    # a missing dataset column is not a sample failure: every sample would be None for a config mistake
    rs = build_rewards(["numeric_answer"])
    with pytest.raises(UserError, match="needs the dataset column 'answer'"):
        rs.funcs[0](["The answer is 1"], solution=["1"])


def test_log_extra_is_forwarded_aligned_even_when_samples_fail():
    def noisy(completions, log_extra=None, **kwargs):
        if "boom" in completions:
            log_extra("seen", ["partial"])  # logged, then the batch call fails: must not leak
            raise ValueError("boom")
        log_extra("seen", list(completions))
        return [0.5] * len(completions)

    log = Metrics()
    with pytest.warns(RewardFailureWarning):
        out = GuardedReward(noisy)(["a", "boom", "c"], log_extra=log.log_extra)
    assert out == [0.5, None, 0.5]
    assert log.extra == [("seen", ["a", None, "c"])]
