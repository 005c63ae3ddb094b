"""The dynamic sampling benchmark's paired summary, against plain Python on generated seeds."""

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.dynamic_sampling import cost_per_success, paired_ratios, summarize


def _run(mode, seed, tokens, reached=True):
    return {"task": "calculator", "mode": mode, "seed": seed, "reached": reached, "generated_tokens": tokens,
            "tokens_spent": tokens, "stopped_by": "target" if reached else "budget", "best_success": 0.9,
            "steps": 10, "train_seconds": 1.0}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1_000, 50_000), st.integers(1_000, 50_000)), min_size=1, max_size=12))
def test_paired_ratios_match_plain_python(tokens):
    pairs = [(_run("off", i, o), _run("refill", i, m)) for i, (o, m) in enumerate(tokens)]
    st_ = paired_ratios(pairs, resamples=2_000)
    ratios = [o / m for o, m in tokens]
    assert st_["seeds"] == len(tokens)
    assert st_["ties"] == sum(o == m for o, m in tokens)
    assert st_["fewer"] == sum(r > 1 for r in ratios) and st_["more"] == sum(r < 1 for r in ratios)
    assert math.isclose(st_["median"], sorted(ratios)[len(ratios) // 2] if len(ratios) % 2
                        else (sorted(ratios)[len(ratios) // 2 - 1] + sorted(ratios)[len(ratios) // 2]) / 2)
    geo = math.prod(ratios) ** (1 / len(ratios))
    assert math.isclose(st_["geometric_mean"], geo, rel_tol=1e-9)
    low, high = st_["ci95"]
    assert min(ratios) * (1 - 1e-9) <= low <= high <= max(ratios) * (1 + 1e-9)


def test_the_interval_covers_one_only_when_seeds_disagree():
    same_gain = [(_run("off", i, 2_000), _run("refill", i, 1_000)) for i in range(8)]
    assert paired_ratios(same_gain)["ci95"][0] > 1.9
    rng = random.Random(0)
    mixed = [(_run("off", i, 10_000), _run("refill", i, rng.choice([5_000, 20_000]))) for i in range(40)]
    low, high = paired_ratios(mixed)["ci95"]
    assert low < 1 < high


def test_summary_prints_the_paired_line_only_when_every_off_run_reached_the_target():
    results = [_run("off", 1, 1_000), _run("refill", 1, 1_000), _run("off", 2, 3_000), _run("refill", 2, 1_500)]
    lines = summarize(results, ["off", "refill"])
    assert any("1 tie(s), 1 with fewer tokens" in line for line in lines)
    results[2] = _run("off", 2, 3_000, reached=False)
    assert not any("tie(s)" in line for line in summarize(results, ["off", "refill"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1_000, 150_000), st.booleans(), st.integers(1_000, 150_000), st.booleans()),
                min_size=2, max_size=12))
def test_cost_per_success_matches_plain_python(rows):
    pairs = [(_run("off", i, o, oy), _run("refill", i, m, my)) for i, (o, oy, m, my) in enumerate(rows)]
    c = cost_per_success(pairs, resamples=500)
    off_reached, mode_reached = sum(r[1] for r in rows), sum(r[3] for r in rows)
    assert (c["off_reached"], c["mode_reached"]) == (off_reached, mode_reached)
    off_cost = sum(r[0] for r in rows) / off_reached if off_reached else math.inf
    mode_cost = sum(r[2] for r in rows) / mode_reached if mode_reached else math.inf
    assert c["off_per_success"] == off_cost and c["mode_per_success"] == mode_cost
    # nothing reached on either side: no comparison (1.0); one side only: 0 or infinity
    expected = 1.0 if math.isinf(off_cost) and math.isinf(mode_cost) else off_cost / mode_cost
    assert c["ratio"] == expected or math.isclose(c["ratio"], expected)
    low, high = c["ci95"]
    assert low <= high


def test_cost_per_success_charges_a_failed_run_what_it_spent():
    # off: one run reaches at 10k, one collapses after spending 70k -> 80k per success;
    # the mode reaches both at 20k each -> 20k per success: 4x, where the per-seed ratio sees only 0.5x
    pairs = [(_run("off", 1, 10_000, True), _run("refill", 1, 20_000, True)),
             (_run("off", 2, 70_000, False), _run("refill", 2, 20_000, True))]
    c = cost_per_success(pairs, resamples=200)
    assert (c["off_per_success"], c["mode_per_success"], c["ratio"]) == (80_000, 20_000, 4.0)
    assert any("tokens per run reaching the target" in line and "4.00x" in line
               for line in summarize([p for pair in pairs for p in pair], ["off", "refill"]))
