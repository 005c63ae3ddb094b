"""Reward hacking: the trained reward rises while the true objective stalls or falls.

With a shadow reward (weight 0: watched, not trained) the test is direct: over the steps where the trained
reward rose, did the shadow rise too (trend t >= T_TREND), and did it not fall while the trained reward held?
Without one, the weaker sign is among the trained components: one rises while another falls significantly
(a shortcut); that is reported as a warning, since only a shadow says which one is the objective.
"""

from __future__ import annotations

from agentgrpo.doctor import names, stats
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.detectors.text import moved, span
from agentgrpo.doctor.finding import FAILURE, OK, WARNING, Finding, confidence, not_judged
from agentgrpo.doctor.signals import RewardFacts, Signals

NAME = "hacking"
FIX = (
    "inspect samples at the onset; make the proxy reward harder to game (tighter checks, penalties for "
    "the exploit), mix the true objective into the trained reward, keep a shadow reward to watch, and stop "
    "at the checkpoint before the onset"
)


def _comp(name: str) -> str:
    return f"rewards/{name}/mean"


def detect(sig: Signals) -> Finding:
    facts = sig.reward
    if facts is None:
        return sig.unjudged(NAME)
    shadows = [s for s in sig.shadows if sig.curve(_comp(s)) is not None]
    if shadows:
        return _with_shadows(sig, facts, shadows)
    trained = [c for c in sig.table.components() if sig.curve(_comp(c)) is not None]
    varying = [c for c in trained if float(sig.curve(_comp(c)).y.std()) > 0]
    if len(varying) >= 2:
        return _shortcut(sig, varying)
    return not_judged(NAME, "a shadow reward (a config reward with weight 0) or several reward components")


def _with_shadows(sig: Signals, facts: RewardFacts, shadows: list[str]) -> Finding:
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
        found = _shadow_check(sig, facts, shadow)
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
    onset = _divergence_onset(sig, name, onset)
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


def _shadow_check(sig: Signals, facts: RewardFacts, name: str):
    """(onset, strength, evidence) when the shadow fell or did not follow the trained reward; else None.

    Falls first (it dates the divergence best): the shadow fell significantly (and ends below where it
    began) while the trained reward did not fall. Then following: regressed on the (smoothed) trained
    reward over the run, the shadow's slope must be significantly positive.
    """
    proxy, rise, shadow = facts.curve, facts.rise, sig.curve(_comp(name))
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
    pair = sig.pair(names.REWARD, _comp(name))
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


def _divergence_onset(sig: Signals, name: str, fallback: float) -> float:
    """Where the trained reward starts to pull away from the shadow: the onset of a rise in the gap between
    the two curves, each standardised over the run (so different units compare)."""
    pair = sig.pair(names.REWARD, _comp(name))
    if pair is None:
        return fallback
    x, trained, true = pair
    zs = [(y - y.mean()) / y.std() if y.std() > 0 else y * 0 for y in (trained, true)]
    r = stats.ramp(x, zs[0] - zs[1], +1)
    return r.onset if r is not None and r.t >= th.T_CHANGE else fallback


def _smooth(y):
    from agentgrpo.doctor.detectors.kl import rolling_median

    return rolling_median(y, max(3, len(y) // 20) | 1)


def _shortcut(sig: Signals, comps: list[str]) -> Finding:
    """Without a shadow: a component rose while another was abandoned, or all the gain is one component
    that saturated (every sample gets it) while the others stayed flat. Warnings: no shadow says which
    component is the objective."""
    rising, falling = {}, {}
    for c in comps:
        curve = sig.curve(_comp(c))
        up, down = curve.ramp(+1), curve.ramp(-1)
        if up is not None and up.t >= th.T_CHANGE and curve.late > curve.early:
            rising[c] = up
        if down is not None and down.t <= -th.T_CHANGE and curve.late < curve.early:
            falling[c] = down
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
    saturated = [c for c in rising if _saturated(sig, c)]
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


def _saturated(sig: Signals, comp: str) -> bool:
    """The component sits at the top of its range and its within-batch std has nearly vanished."""
    curve, std = sig.curve(_comp(comp)), sig.curve(f"rewards/{comp}/std")
    s = curve.smooth
    span = float(s.max() - s.min())
    top = span > 0 and (curve.late - float(s.min())) >= th.COMPONENT_SATURATED * span
    return bool(top and std is not None and std.late <= th.COMPONENT_SAT_STD * max(std.early, 1e-12))
