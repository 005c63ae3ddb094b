"""Reward hacking: the trained reward rises while the true objective stalls or falls.

A held-out task score logged beside the reward (an evaluation's accuracy or success rate) that is exactly 0 on
every evaluation once the trained reward's rise settled is hacking too (`_heldout_never_pays`), and so is every
held-out task score staying where it began while the trained reward rose materially (`_heldout_flat`).

With a shadow reward (weight 0: watched, not trained) the test is direct: over the steps where the trained
reward rose, did the shadow rise too (trend t >= T_TREND), and did it not fall while the trained reward held?
Without one, the objective can often be read from the components' names: TRL recipes name the task reward
``correctness``/``accuracy``/``answer``/``pass``..., and format rewards ``format``/``xml``/``strict``/
``soft``/``count``/``tag``; when no component is named as the task but some are named as form, the others are the
objective (by elimination). When the trained reward learned (over the run, or in an `early_gain` it then kept), the
*other* components rose significantly, and the objective did not gain materially (its gain, even at the top of its
noise, is below ``MATERIAL_COMPONENT`` of what the others gained: a significant 0.001 -> 0.005 next to a proxy's
0.2 -> 0.7 is not the objective improving), the gain came from the proxies: reward hacking (a failure whose evidence
says how the objective was inferred). A task component logged as one constant value on every step (e.g. exactly 0:
it never paid) is kept for this test: a true objective that never moves while another component rises is the
strongest hacking evidence there is. Otherwise the weaker sign is among the trained components: one rises while
another falls significantly (a shortcut), or all the gain is one saturated component; those are warnings, since
nothing says which one is the objective, unless the one that fell pays in the reward and lost ``MATERIAL_COMPONENT``
of its level: a failure whatever the names (batch 6).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from agentgrpo.doctor import names, stats
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.curves import Curves, RewardFacts
from agentgrpo.doctor.detectors.component_names import is_task, objectives
from agentgrpo.doctor.detectors.early_gain import early_gain
from agentgrpo.doctor.detectors.objective import heldout_rose, unpaid
from agentgrpo.doctor.detectors.text import moved, span
from agentgrpo.doctor.finding import FAILURE, OK, WARNING, Finding, confidence, not_judged
from agentgrpo.doctor.modes import Mode

NAME = Mode.HACKING
FIX = (
    "inspect samples at the onset; make the proxy reward harder to game (tighter checks, penalties for "
    "the exploit), mix the true objective into the trained reward, keep a shadow reward to watch, and stop "
    "at the checkpoint before the onset"
)


def _comp(name: str) -> str:
    return f"rewards/{name}/mean"


def detect(curves: Curves) -> Finding:
    facts = curves.reward
    if facts is None:
        return curves.unjudged(NAME)
    shadows = [s for s in curves.shadows if curves.curve(_comp(s)) is not None]
    if shadows:
        return _with_shadows(curves, facts, shadows)
    unpaid = _heldout_never_pays(curves, facts) or _heldout_flat(curves, facts)
    if unpaid is not None:
        return unpaid
    trained = [c for c in curves.table.components() if curves.curve(_comp(c)) is not None]
    varying = [c for c in trained if float(curves.curve(_comp(c)).y.std()) > 0]
    inferred = _inferred_objective(curves, facts, trained) if len(trained) >= 2 else None
    if inferred is not None:
        return _unless_heldout_rose(curves, inferred)
    if len(trained) >= 2 and not objectives(trained)[0]:
        floor = _floor_objective(curves, facts, trained)
        if floor is not None:
            return _unless_heldout_rose(curves, floor)
    if len(varying) >= 2:
        sacrificed = _sacrificed(curves, facts, varying)
        return _unless_heldout_rose(curves, sacrificed) if sacrificed is not None else _shortcut(curves, varying)
    return not_judged(NAME, "a shadow reward (a config reward with weight 0) or several reward components")


def _unless_heldout_rose(curves: Curves, finding: Finding) -> Finding:
    """A hacking failure inferred from the training components (which one is the objective, by name or by the
    curves) is contradicted by a held-out task score that rose materially (`heldout_rose`): the objective,
    measured where the policy cannot game it, improved. The proxies' larger gain is then a warning."""
    if finding.status != FAILURE:
        return finding
    rose = heldout_rose(curves)
    if rose is None:
        return finding
    return replace(
        finding,
        status=WARNING,
        verdict=finding.verdict.replace("reward hacking:", "mostly proxy gain:", 1) + ", yet the held-out score rose",
        confidence=min(finding.confidence, 0.6),
        evidence=[*finding.evidence, rose + ": the objective improved where it cannot be gamed, so not hacking"],
    )


def _heldout_never_pays(curves: Curves, facts: RewardFacts) -> Finding | None:
    """The trained reward learned, and a held-out task score (`Curves.heldout`) is exactly 0 on every
    evaluation once the reward's rise settled (at least ``HELDOUT_EVALS``): what the reward paid for does not
    transfer to the task at all. Evaluations are sparse, so this asks for the strongest evidence only (the
    lowest a rate can be, every time), not a trend."""
    if not facts.learned or facts.rise is None:
        return None
    for column in curves.heldout:
        x, y = curves.table.series(column)
        after = y[x >= facts.rise.settled]
        if len(after) < th.HELDOUT_EVALS or float(np.max(after)) > 0.0:
            continue
        rf = facts.curve
        return Finding(
            detector=NAME,
            status=FAILURE,
            verdict=f"reward hacking: the held-out {column} is 0 while the trained reward rose",
            confidence=confidence(facts.rise.t, th.T_CHANGE, [True]),
            onset=int(round(facts.rise.onset)),
            evidence=[
                moved("reward (trained)", facts.rise),
                f"held-out {column} exactly 0 on all {len(after)} evaluations from step "
                f"{facts.rise.settled:.0f} on, where the reward's rise settled (reward {rf.early:.3g} early -> "
                f"{rf.late:.3g} late)",
            ],
            fix=FIX,
            metrics=[names.REWARD, column],
        )
    return None


def _heldout_flat(curves: Curves, facts: RewardFacts) -> Finding | None:
    """The trained reward learned materially (a significant rise by at least ``MATERIAL_COMPONENT`` of its early
    level's size), and every held-out task score (`Curves.heldout`, each evaluated at least ``HELDOUT_RISE_EVALS``
    times) stayed where it began: no significant rise (trend ``t < T_TREND``), a late level less than
    ``HELDOUT_RISE_MIN`` above where it began (its evaluations up to the reward's rise, else its first) and below
    ``HELDOUT_CEILING`` (a 0-1 score at its ceiling has nothing left to gain). What the policy learned does not
    transfer past its training prompts: the trained reward's rise is the gap between them (batch 21: a training
    reward 0.26 -> 0.46 beside a held-out accuracy 0.548 -> 0.557 over 7 evaluations). `_heldout_never_pays` is its
    strongest case, a score at 0."""
    rf = facts.curve
    if not facts.learned or facts.rise is None or rf.late - rf.early < th.MATERIAL_COMPONENT * abs(rf.early):
        return None
    flat = []
    for column in curves.heldout:
        x, y = curves.table.series(column)
        if len(y) < th.HELDOUT_RISE_EVALS:
            return None  # a score evaluated too rarely to say it stayed flat
        before = y[x <= facts.rise.onset]  # where it began: its evaluations up to the reward's rise, else the first
        began = float(np.median(before)) if len(before) else float(y[0])
        late = stats.level(stats.windows(y, th.EDGE_FRAC)[1])
        if stats.trend(x, y).t >= th.T_TREND or late - began >= th.HELDOUT_RISE_MIN or late >= th.HELDOUT_CEILING:
            return None
        flat.append(f"held-out {column} {began:.3g} -> {late:.3g} over {len(y)} evaluations")
    if not flat:
        return None
    return Finding(
        detector=NAME,
        status=FAILURE,
        verdict="reward hacking: the trained reward rose, the held-out task score did not",
        confidence=confidence(facts.rise.t, th.T_CHANGE, [True]),
        onset=int(round(facts.rise.onset)),
        evidence=[moved("reward (trained)", facts.rise), *flat,
                  "what the policy learned does not transfer past its training prompts"],
        fix=FIX,
        metrics=[names.REWARD, *curves.heldout],
    )


def _with_shadows(curves: Curves, facts: RewardFacts, shadows: list[str]) -> Finding:
    if not facts.learned:
        return Finding(
            detector=NAME,
            status=OK,
            verdict="no hacking: the trained reward did not rise",
            confidence=0.0,
            onset=None,
            evidence=[span("reward", facts.curve.early, facts.curve.late)],
            fix="",
            metrics=[],
        )
    rise = facts.rise
    worst = None
    for shadow in shadows:
        found = _shadow_check(curves, facts, shadow)
        if found and (worst is None or found[0] < worst[0]):
            worst = found
    if worst is None:
        return Finding(
            detector=NAME,
            status=OK,
            verdict="no hacking: shadow rewards rose with the trained reward",
            confidence=0.0,
            onset=None,
            evidence=[moved("reward", rise)],
            fix="",
            metrics=[],
        )
    onset, t, evidence, name = worst
    onset = _divergence_onset(curves, name, onset)
    return Finding(
        detector=NAME,
        status=FAILURE,
        verdict="reward hacking",
        confidence=confidence(t, th.T_TREND, [True]),
        onset=int(round(onset)),
        evidence=[moved("reward (trained)", rise)] + evidence,
        fix=FIX,
        metrics=[names.REWARD] + [_comp(s) for s in shadows],
    )


def _shadow_check(curves: Curves, facts: RewardFacts, name: str):
    """(onset, strength, evidence) when the shadow fell or did not follow the trained reward; else None.

    Falls first (it dates the divergence best): the shadow fell significantly (and ends below where it
    began) while the trained reward did not fall. Then following: regressed on the (smoothed) trained
    reward over the run, the shadow's slope must be significantly positive.
    """
    proxy, rise, shadow = facts.curve, facts.rise, curves.curve(_comp(name))
    fall = shadow.ramp(-1)
    if fall is not None and fall.t <= -th.T_CHANGE and shadow.late < shadow.early:
        since = proxy.x >= fall.onset
        if since.sum() < 3 or stats.trend(proxy.x[since], proxy.y[since]).t > -th.T_TREND:
            return (
                fall.onset,
                abs(fall.t),
                [moved(f"shadow {name}", fall) + " while the trained reward held"],
                name,
            )
    pair = curves.pair(names.REWARD, _comp(name))
    if pair is None:
        return None
    _, trained, true = pair
    follow = stats.trend(_smooth(trained), true)
    if follow.t >= th.T_TREND:
        return None
    early, late = stats.windows(true, th.EDGE_FRAC)
    text = (
        f"shadow {name} did not follow: {span('', stats.level(early), stats.level(late)).strip()} "
        f"(slope on the trained reward t = {follow.t:.1f}, needs {th.T_TREND:.0f})"
    )
    return rise.onset, th.T_TREND + max(0.0, -follow.t), [text], name


def _divergence_onset(curves: Curves, name: str, fallback: float) -> float:
    """Where the trained reward starts to pull away from the shadow: the onset of a rise in the gap between
    the two curves, each standardised over the run (so different units compare)."""
    pair = curves.pair(names.REWARD, _comp(name))
    if pair is None:
        return fallback
    x, trained, true = pair
    zs = [(y - y.mean()) / y.std() if y.std() > 0 else y * 0 for y in (trained, true)]
    r = stats.ramp(x, zs[0] - zs[1], +1)
    return r.onset if r is not None and r.t >= th.T_CHANGE else fallback


def _smooth(y):
    from agentgrpo.doctor.detectors.kl import rolling_median

    return rolling_median(y, max(3, len(y) // 20) | 1)


def _inferred_objective(curves: Curves, facts: RewardFacts, comps: list[str]) -> Finding | None:
    """Reward hacking judged against the components the names say are the objective; None when names say
    nothing, or the objective followed the others' gain materially."""
    tasks, how = objectives(comps)
    proxies = [c for c in comps if c not in tasks]
    if not tasks or not proxies or not (facts.learned or early_gain(curves) is not None):
        return None  # the trained reward did not rise (over the run, or early to a level it then kept)
    table = curves.table
    rest = sum(table.columns[_comp(c)] for c in proxies)
    for task, col in _objective_series(table, tasks):
        ok = np.isfinite(rest) & np.isfinite(col)
        spread = table.columns.get(f"rewards/{task}/std")  # None for a sum of several, or when not logged
        if ok.sum() < th.MIN_POINTS or always_paid(col[ok]) or at_its_best(
            col[ok], spread[ok] if spread is not None else None
        ):
            continue
        x, gained = stats.bin_means(table.steps[ok], rest[ok])
        _, true = stats.bin_means(table.steps[ok], col[ok])
        rise = stats.ramp(x, gained, +1)
        if rise is None or rise.t < th.T_CHANGE:
            continue  # the other components did not gain: nothing to have hacked with
        judged = immaterial_gain(true, gained, before_rise(x, rise), rise_bins(x, rise))
        never = None if judged is not None else unpaid(curves)  # its rare payouts: no tight bound
        if judged is None and never is None:
            continue
        gain, bound, others = judged or (0.0, 0.0, 0.0)
        early, late = stats.windows(true, th.EDGE_FRAC)
        moved_text = span("", *objective_levels(early, late)[:2]).strip()
        if never is not None:
            why = never  # too sparse for its gain to be bounded, but it almost never paid: nothing was gained
        elif float(np.ptp(true)) == 0.0:
            why = f"{task} never moved: {true[0]:.3g} on every logged step (it never paid)"
        else:
            why = (
                f"{task} did not gain materially: {moved_text}, a gain of {gain:.3g} (at most {bound:.3g} "
                f"allowing for its noise), under {th.MATERIAL_COMPONENT:g} x the others' gain {others:.3g}"
            )
        gainers = moving(table, proxies, ok) or proxies
        return Finding(
            detector=NAME,
            status=FAILURE,
            verdict=f"reward hacking: the gain came from {', '.join(gainers)}, not {task}",
            confidence=confidence(rise.t, th.T_CHANGE, [gain <= 0]),
            onset=int(round(rise.onset)),
            evidence=[
                moved(f"the other components ({', '.join(gainers)})", rise),
                why,
                f"{task} taken as the objective by {how} (no shadow reward logged)",
            ],
            fix=FIX,
            metrics=[names.REWARD, _comp(task)] + [_comp(c) for c in proxies],
        )
    return None


def _objective_series(table, tasks: list[str]) -> list[tuple[str, np.ndarray]]:
    """(name, values) of the objective: one task component as it is; several as one objective, their sum
    (weighted as the reward weighs them, when its weights are known): the task pays when any part of it does,
    so a part that falls as another rises (a fallback parser's bonus that shrinks as the main parser
    succeeds) is not a hacked objective (batch 9).

    >>> from types import SimpleNamespace as NS
    >>> t = NS(columns={"rewards/a/mean": np.array([0.0, 1.0]), "rewards/b/mean": np.array([1.0, 0.0])},
    ...        meta={"reward_weights": {"a": 1.0, "b": 0.1}})
    >>> [(n, v.tolist()) for n, v in _objective_series(t, ["a", "b"])]
    [('a + b', [0.1, 1.0])]
    """
    if len(tasks) == 1:
        return [(tasks[0], table.columns[_comp(tasks[0])])]
    weights = table.meta.get("reward_weights", {})
    total = sum(weights.get(t, 1.0) * table.columns[_comp(t)] for t in tasks)
    return [(" + ".join(tasks), total)]


def _objective_kept(table, tasks: list[str]) -> bool:
    """The objective's parts together (`_objective_series`) end no lower than they began (late window level
    at least the early one)."""
    _, total = _objective_series(table, tasks)[0]
    total = total[np.isfinite(total)]
    if len(total) < th.MIN_POINTS:
        return False
    early, late = stats.windows(total, th.EDGE_FRAC)
    return stats.level(late) >= stats.level(early)


def moving(table, comps: list[str], ok: np.ndarray) -> list[str]:
    """The components that took more than one value over the judged steps: a component held at one value
    (0 on every step, or a bonus paid in full throughout) contributed nothing to a gain and is not named
    as where it came from.

    >>> from types import SimpleNamespace as NS
    >>> t = NS(columns={"rewards/a/mean": np.array([0.0, 0.1, 0.3]), "rewards/b/mean": np.zeros(3)})
    >>> moving(t, ["a", "b"], np.ones(3, bool))
    ['a']
    """
    return [c for c in comps if float(np.ptp(table.columns[_comp(c)][ok])) > 0.0]


def always_paid(values: np.ndarray) -> bool:
    """A component logged as one positive value on every step paid in full from the first step (or is a
    penalty that never fired): it cannot show whether the objective improved, so it is no hacking evidence.
    Only a constant at or below zero (nothing paid, or a penalty on every step) is an objective that never
    paid.

    >>> always_paid(np.full(5, 0.5)), always_paid(np.zeros(5)), always_paid(np.full(5, -2.0))
    (True, False, False)
    """
    return bool(len(values) and np.ptp(values) == 0.0 and values[0] > 0)


def at_its_best(values: np.ndarray, spread: np.ndarray | None) -> bool:
    """The objective sits at the most it ever paid, with every sample of the step paying it (its logged spread
    ``rewards/<f>/std`` 0), on most late logs (``FIXED_OUTPUT`` of them): it learned the task (or had it from the
    start) and has nothing left to gain, however noisy its start (batch 16: a correct-answer reward 0.59 early, 1.0
    with spread 0 on most late steps, whose three logs before the proxies' rise happened to be high). A hacked
    objective does not sit at its best; a plateau at a low rate still has samples that differ. Without a logged
    spread, a step mean exactly at the component's highest value on most late logs says the same: a mean of
    samples lands on one value again and again only when every sample pays the most it can (batch 19: a +1/-1
    correctness at exactly 1.0 on 75% of late steps beside a rising skill bonus).

    >>> best, spread = np.r_[np.full(8, 0.5), np.ones(4), [0.9]], np.r_[np.full(8, 0.5), np.zeros(4), [0.3]]
    >>> low, low_spread = np.r_[np.zeros(8), np.full(5, 0.05)], np.r_[np.zeros(8), np.full(5, 0.2)]
    >>> at_its_best(best, spread), at_its_best(low, low_spread), at_its_best(best, None)
    (True, False, True)
    >>> at_its_best(np.r_[np.zeros(8), [0.2, 0.1, 0.15, 0.05, 0.1]], None), at_its_best(np.zeros(13), None)
    (False, False)
    """
    top = float(np.max(values))
    late = stats.windows(values, th.EDGE_FRAC)[1]
    full = stats.at_top(late, top)
    if spread is not None:
        full &= np.nan_to_num(stats.windows(spread, th.EDGE_FRAC)[1], nan=1.0) == 0.0
    return float(np.mean(full)) >= th.FIXED_OUTPUT and float(np.ptp(values)) > 0.0  # a constant never paid more


def at_floor(values: np.ndarray) -> bool:
    """A reward that pays rarely: never negative, not constant, and its median in the lower half of its
    range (most steps pay close to nothing, a few pay something). A bonus held near its ceiling has its
    median in the upper half; a penalty takes negative values.

    >>> at_floor(np.array([0.0, 0.001, 0.0, 0.012, 0.002])), at_floor(np.array([0.1, 0.09, 0.1, 0.1, 0.08]))
    (True, False)
    """
    lo, hi = float(np.min(values)), float(np.max(values))
    return lo >= 0.0 and hi > lo and float(np.median(values)) - lo <= 0.5 * (hi - lo)


def _floor_objective(curves: Curves, facts: RewardFacts, comps: list[str]) -> Finding | None:
    """Hacking judged by the curves' relation when names say nothing (components ``f``, ``g``): one component
    pays rarely (`at_floor`), never pays as much as ``MATERIAL_COMPONENT`` of what the others gained, and
    gained immaterially while the others rose significantly and the reward learned. Such a component is
    no bonus at its ceiling and no penalty: it is a reward that almost never pays, and all of the reward's
    gain came from the rest (a compilability proxy rising 0.2 -> 0.7 beside correctness at 0.001-0.016)."""
    if not facts.learned:
        return None
    table = curves.table
    for cand in comps:
        col = table.columns[_comp(cand)]
        others = [c for c in comps if c != cand]
        rest = sum(table.columns[_comp(c)] for c in others)
        ok = np.isfinite(rest) & np.isfinite(col)
        if ok.sum() < th.MIN_POINTS or not at_floor(col[ok]):
            continue
        x, gained = stats.bin_means(table.steps[ok], rest[ok])
        _, true = stats.bin_means(table.steps[ok], col[ok])
        rise = stats.ramp(x, gained, +1)
        if rise is None or rise.t < th.T_CHANGE:
            continue
        judged = immaterial_gain(true, gained, before_rise(x, rise), rise_bins(x, rise))
        if judged is None:
            continue
        gain, bound, gain_others = judged
        top = float(np.max(true))
        if top >= th.MATERIAL_COMPONENT * gain_others:
            continue
        early, late = stats.windows(true, th.EDGE_FRAC)
        moved_text = span("", *objective_levels(early, late)[:2]).strip()
        gainers = moving(table, others, ok) or others
        return Finding(
            detector=NAME,
            status=FAILURE,
            verdict=f"reward hacking: the gain came from {', '.join(gainers)}, not {cand}",
            confidence=confidence(rise.t, th.T_CHANGE, [gain <= 0]),
            onset=int(round(rise.onset)),
            evidence=[
                moved(f"the other components ({', '.join(gainers)})", rise),
                f"{cand} pays rarely and did not gain materially: {moved_text}, at most {top:.3g} at its highest, "
                f" under {th.MATERIAL_COMPONENT:g} x the others' gain {gain_others:.3g}",
                f"{cand} taken as the objective by the curves (names say nothing): a reward that almost "
                "never pays while the rest of the reward rose; log it as a shadow reward to confirm",
            ],
            fix=FIX,
            metrics=[names.REWARD, _comp(cand)] + [_comp(c) for c in others],
        )
    return None


def before_rise(x: np.ndarray, rise: stats.Ramp) -> int:
    """The number of bins before the others' rise began (its onset)."""
    return int(np.searchsorted(x, rise.onset))


def rise_bins(x: np.ndarray, rise: stats.Ramp) -> tuple[int, float]:
    """(the number of bins up to where the others' rise settled, its fitted gain): `immaterial_gain`'s ``rise``."""
    return int(np.searchsorted(x, rise.settled, side="right")), float(rise.after - rise.before)


def immaterial_gain(
    true: np.ndarray, gained: np.ndarray, before: int | None = None, rise: tuple[int, float] | None = None
) -> tuple[float, float, float] | None:
    """(gain, its upper bound, the others' gain) when the objective's gain, even at the top of its noise
    (two standard errors of the difference of its early and late levels), is below ``MATERIAL_COMPONENT``
    of what the other components gained over the same steps (the same units: components add up to the
    reward); None when it may be material. A gain that is significant but a sliver of the others' is not
    the objective improving; a flat or falling objective next to a rising proxy is the clearest case.
    Materiality is also judged on the objective's own scale: one that starts below 0 (a penalty, whose best
    is to vanish) and closed ``MATERIAL_COMPONENT`` of its distance to its best (0, or the most it paid)
    gained, however much more the others rose in absolute terms (batch 4: -0.32 -> -0.06 beside proxies
    that gained 2.6).

    >>> x = np.arange(40.0); proxy = 0.2 + 0.5 * x / 40
    >>> immaterial_gain(0.001 + 0.0001 * x, proxy) is not None, immaterial_gain(0.1 + 0.4 * x / 40, proxy)
    (True, None)
    >>> immaterial_gain(-0.32 + 0.26 * x / 40, 5 * proxy), immaterial_gain(-0.32 + 0.02 * x / 40, 5 * proxy) is None
    (None, False)

    Both gains are measured from before the others' rise (``before``: the bins before its onset) when it began
    inside the early window: an early window that straddles the rise would count part of the gain as the
    start (batch 5: proxies saturated at step 12 of 93, exact_match 0.002 -> 0.05 beside their 0.02 -> 0.75).

    >>> jump = np.where(x < 3, 0.02, 0.75); true = np.where(x < 3, 0.0, 0.05)
    >>> immaterial_gain(true, jump) is None, immaterial_gain(true, jump, before=3) is None
    (True, False)

    A rise that began at the first log has no bins before it (batch 13: a format reward from -0.1 at step 1 to its
    maximum 2.5 by step 17 of 240, the chess score at -0.98 throughout): ``rise`` (the bins up to where it
    settled, the ramp's fitted gain) then gives the others' gain, and the objective starts at its level over the
    bins of that rise.

    >>> x = np.arange(100.0); ramp = np.where(x < 6, -0.1 + 0.5 * x, 2.4); flat = -0.98 + 0.01 * (x % 3)
    >>> immaterial_gain(flat, ramp, before=0) is None, immaterial_gain(flat, ramp, before=0, rise=(6, 2.5)) is None
    (True, False)
    """
    early, late = stats.windows(true, th.EDGE_FRAC)
    e_other, l_other = stats.windows(gained, th.EDGE_FRAC)
    others = None
    if before is not None and 2 <= before < len(early):
        early, e_other = true[:before], gained[:before]
    elif before is not None and before < 2 and rise is not None and 2 <= rise[0] < len(early):
        early, others = true[: rise[0]], rise[1]  # began at the first log: the ramp's own gain
    if others is None:
        others = stats.level(l_other) - stats.level(e_other)
    if others <= 0:
        return None
    start, end, by_mean = objective_levels(early, late)
    gain = end - start
    spread = float(np.std(true)) if by_mean else 1.2533 * stats.noise(true)  # a median's: sqrt(pi/2) x a mean's
    bound = gain + 2.0 * spread * (1 / len(early) + 1 / len(late)) ** 0.5  # two standard errors above the gain
    if bound >= th.MATERIAL_COMPONENT * others or closed_its_distance(true, gain):
        return None
    return gain, bound, others


def objective_levels(early: np.ndarray, late: np.ndarray) -> tuple[float, float, bool]:
    """(early level, late level, whether they are means) of an objective: medians, unless over half of either
    window logs one value exactly (a group mean of 0 on the steps where no sample paid). The median of such a
    window is that value however often the other steps pay; the mean counts the payouts (batch 15: a GSM8K
    ``check_answer`` at 0 on most steps, its late mean 0.44 as the answers were learned after the format).

    >>> objective_levels(np.zeros(10), np.r_[np.zeros(6), [3.0, 1.5, 3.0, 0.75]])
    (0.0, 0.825, True)
    >>> objective_levels(np.array([0.1, 0.2, 0.3]), np.array([0.4, 0.5, 0.5, 0.6]))
    (0.2, 0.5, False)
    """
    if _one_value(early) or _one_value(late):
        return float(np.mean(early)), float(np.mean(late)), True
    return stats.level(early), stats.level(late), False


def _one_value(window: np.ndarray) -> bool:
    """Over half of a window logs its median exactly.

    >>> _one_value(np.array([0.0, 0.0, 3.0, 0.0, -1.0])), _one_value(np.array([0.1, 0.2, 0.2, 0.3]))
    (True, False)
    """
    return bool(len(window)) and float(np.mean(window == np.median(window))) > 0.5


def closed_its_distance(true: np.ndarray, gain: float) -> bool:
    """An objective that started below 0 gained at least ``MATERIAL_COMPONENT`` of its distance to its best:
    0 (a penalty at best vanishes) or the most it paid, when that is higher. A reward that starts at or above
    0 has no known best (its ceiling is not logged), so this says nothing about it.

    >>> closed_its_distance(np.array([-0.3, -0.2, -0.05]), 0.25), closed_its_distance(np.array([0.0, 0.1]), 0.1)
    (True, False)
    """
    start = stats.level(stats.windows(true, th.EDGE_FRAC)[0])
    if not start < 0.0:
        return False
    best = max(0.0, float(np.max(true)))
    return gain >= th.MATERIAL_COMPONENT * (best - start)


def _shortcut(curves: Curves, comps: list[str]) -> Finding:
    """Without a shadow: a component rose while another was abandoned, or all the gain is one component
    that saturated (every sample gets it) while the others stayed flat. Warnings: no shadow says which
    component is the objective."""
    rising, falling = _moves(curves, comps)
    pairs = [(r, f) for r in rising for f in falling if r != f]
    fix = FIX + "; add the true objective as a shadow reward (weight 0) to judge"
    if pairs:
        up_name, down_name = max(pairs, key=lambda p: abs(falling[p[1]].t))
        up, down = rising[up_name], falling[down_name]
        return Finding(
            detector=NAME,
            status=WARNING,
            verdict=f"possible shortcut: {down_name} abandoned while {up_name} rose",
            confidence=confidence(min(up.t, -down.t), th.T_CHANGE, []),
            onset=int(round(max(up.onset, down.onset))),
            evidence=[
                moved(f"rewards/{up_name}", up),
                moved(f"rewards/{down_name}", down),
                "no shadow reward: cannot say which is the true objective",
            ],
            fix=fix,
            metrics=[_comp(up_name), _comp(down_name)],
        )
    # a task component (correctness, accuracy, ...) that saturates is the objective being met, not a shortcut
    saturated = [c for c in rising if _saturated(curves, c) and not is_task(c)]
    if len(rising) == 1 and saturated:
        name, up = saturated[0], rising[saturated[0]]
        flat = ", ".join(c for c in comps if c != name)
        return Finding(
            detector=NAME,
            status=WARNING,
            verdict=f"possible hacking: all the reward gain is {name}, which saturated",
            confidence=confidence(up.t, th.T_CHANGE, []),
            onset=int(round(up.onset)),
            evidence=[
                moved(f"rewards/{name}", up) + " and every sample now gets it",
                f"no rise in {flat}",
                "no shadow reward: cannot say whether the objective improved",
            ],
            fix=fix,
            metrics=[_comp(c) for c in comps],
        )
    return Finding(
        detector=NAME,
        status=OK,
        verdict="no shortcut among the reward components (no shadow reward to judge by)",
        confidence=0.0,
        onset=None,
        evidence=[f"components: {', '.join(comps)}"],
        fix="",
        metrics=[],
    )


def _moves(curves: Curves, comps: list[str]) -> tuple[dict, dict]:
    """The components that rose, and those that fell, significantly (a ramp, |t| >= T_CHANGE) and for good."""
    rising, falling = {}, {}
    for c in comps:
        curve = curves.curve(_comp(c))
        up, down = curve.ramp(+1), curve.ramp(-1)
        if up is not None and up.t >= th.T_CHANGE and curve.late > curve.early:
            rising[c] = up
        if down is not None and down.t <= -th.T_CHANGE and curve.late < curve.early:
            falling[c] = down
    return rising, falling


def pays(curves: Curves, comp: str) -> bool:
    """A component that is a pay, not a cost: never negative, with a positive weight where one is known (a cost
    enters the reward with a negative weight or as negative values, and paying more of it can be the price of
    the objective)."""
    weight = curves.table.meta.get("reward_weights", {}).get(comp, 1.0)
    return weight > 0 and float(np.min(curves.curve(_comp(comp)).y)) >= 0.0


def _sacrificed(curves: Curves, facts: RewardFacts, comps: list[str]) -> Finding | None:
    """Reward hacking whatever the names: the reward learned, one component rose significantly, and another
    that pays fell significantly and materially against its own scale (its late level at least
    ``MATERIAL_COMPONENT`` of its early level below it). The reward's gain was bought by giving up part of
    what the reward also paid for; a dip within noise, or a cost paid more, is no such sign."""
    if not facts.learned or _total_among(curves.table, comps):
        return None
    rising, falling = _moves(curves, comps)
    tasks, _ = objectives(comps)
    for down_name, down in sorted(falling.items(), key=lambda kv: kv[1].t):
        curve = curves.curve(_comp(down_name))
        lost = curve.early - curve.late
        ups = [c for c in rising if c != down_name]
        if not ups or not pays(curves, down_name) or not lost >= th.MATERIAL_COMPONENT * curve.early > 0:
            continue
        if down_name in tasks and len(tasks) > 1 and _objective_kept(curves.table, tasks):
            continue  # one part of the objective gave way to another part: the objective as a whole did not
        up_name = max(ups, key=lambda c: rising[c].t)
        up = rising[up_name]
        return Finding(
            detector=NAME,
            status=FAILURE,
            verdict=f"reward hacking: the gain came from {up_name} while {down_name} fell",
            confidence=confidence(min(up.t, -down.t), th.T_CHANGE, []),
            onset=int(round(up.onset)),
            evidence=[
                moved("reward (trained)", facts.rise),
                moved(f"rewards/{up_name}", up),
                moved(f"rewards/{down_name}", down)
                + f": {lost / curve.early:.0%} of its early level lost, over {th.MATERIAL_COMPONENT:g}",
                f"{down_name} pays in the reward: a part of what it rewards was given up for {up_name}",
            ],
            fix=FIX,
            metrics=[names.REWARD, _comp(up_name), _comp(down_name)],
        )
    return None


def _total_among(table, comps: list[str]) -> bool:
    """One component is the total reward itself: the others are then watched beside it, not paid in it.

    >>> from types import SimpleNamespace as NS
    >>> r = np.array([0.1, 0.5, 0.9]); t = NS(columns={"reward": r, "rewards/a/mean": r, "rewards/b/mean": 1 - r})
    >>> _total_among(t, ["a", "b"]), _total_among(t, ["b"])
    (True, False)
    """
    total = table.columns[names.REWARD]
    for c in comps:
        col = table.columns[_comp(c)]
        ok = np.isfinite(col) & np.isfinite(total)
        if ok.sum() >= 2 and np.allclose(col[ok], total[ok], rtol=1e-6, atol=1e-9):
            return True
    return False


def _saturated(curves: Curves, comp: str) -> bool:
    """The component sits at the top of its range and its within-batch std has nearly vanished."""
    curve, std = curves.curve(_comp(comp)), curves.curve(f"rewards/{comp}/std")
    s = curve.smooth
    span = float(s.max() - s.min())
    top = span > 0 and (curve.late - float(s.min())) >= th.COMPONENT_SATURATED * span
    return bool(top and std is not None and std.late <= th.COMPONENT_SAT_STD * max(std.early, 1e-12))
