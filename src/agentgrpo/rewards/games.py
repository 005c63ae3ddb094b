"""Wordle's rules, a replay of an episode's guesses, and the rewards read from the replay.

Rewards never trust the text of tool messages: they replay the guesses the agent made (the tool calls
that got a tool response, i.e. that the environment ran) against the row's ``secret`` with the same rules
the environment plays by, so a forged feedback line in the model's own text earns nothing.

* ``wordle_reward`` (trained): 1.0 when a guess hit the secret AND the final reply is the word; otherwise
  ``PROGRESS_WEIGHT`` x the best guess's letter score (greens count 2, yellows 1, out of 10): a shaping proxy.
* ``wordle_solved`` (the true objective, a shadow and the eval's success): 1.0 when a guess hit the secret.
* ``wordle_valid_moves``: the share of guesses that were legal moves (0.0 without any guess).

Per step, ``wordle_reward`` logs the turn count, valid guesses, invalid moves, the solve rate and the mean
reward of each turn (``wordle/turn_K_reward``: a guess's letter score, 1.0 for the solving guess, 0.0 for
an invalid move) through TRL's ``log_metric``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from importlib import resources

from agentgrpo.rewards._text import completion_text, messages

GREEN, YELLOW, GREY = "G", "Y", "X"
WORD_LENGTH = 5
MAX_GUESSES = 6
PROGRESS_WEIGHT = 0.3  # an unsolved game earns at most this (keeps any near-miss well below a win)
TOOL = "guess"
MAX_LOGGED_TURNS = 10


class InvalidMove(ValueError):
    """A move the rules do not allow; the environment returns it to the model as an observation."""


@functools.cache
def word_lists() -> tuple[tuple[str, ...], frozenset[str]]:
    """(secret words, every valid guess), from the lists shipped in ``agentgrpo/tasks/data`` (SCOWL)."""
    data = resources.files("agentgrpo.tasks") / "data"

    def read(name: str) -> tuple[str, ...]:
        text = (data / name).read_text(encoding="utf-8")
        return tuple(w for w in (line.strip() for line in text.splitlines()) if w and not w.startswith("#"))

    answers, guesses = read("wordle_answers.txt"), read("wordle_guesses.txt")
    return answers, frozenset(guesses) | frozenset(answers)


def wordle_feedback(guess: str, secret: str) -> str:
    """Per-letter feedback: G right letter right spot, Y in the word elsewhere, X not (or no more) in it.

    Repeated letters are matched as Wordle does: greens first, then yellows left to right while the
    secret has unmatched copies left.

    >>> wordle_feedback("crane", "crane"), wordle_feedback("nacre", "crane"), wordle_feedback("geese", "those")
    ('GGGGG', 'YYYYG', 'XXXGG')
    >>> wordle_feedback("lolly", "hello")
    'XYGGX'
    """
    result = [GREY] * len(guess)
    left: dict[str, int] = {}
    for i, (g, s) in enumerate(zip(guess, secret)):
        if g == s:
            result[i] = GREEN
        else:
            left[s] = left.get(s, 0) + 1
    for i, g in enumerate(guess):
        if result[i] != GREEN and left.get(g, 0) > 0:
            result[i] = YELLOW
            left[g] -= 1
    return "".join(result)


def letter_score(feedback: str) -> float:
    """A guess's progress: greens count 2, yellows 1, over the maximum (1.0 = solved).

    >>> letter_score("GGGGG"), letter_score("GYXXX"), letter_score("XXXXX")
    (1.0, 0.3, 0.0)
    """
    return (2 * feedback.count(GREEN) + feedback.count(YELLOW)) / (2 * len(feedback))


def check_move(word, allowed: frozenset[str]) -> str:
    """The guess as a lower-case word, or `InvalidMove` saying what is wrong (the move uses no guess).

    >>> check_move(" Crane ", frozenset({"crane"}))
    'crane'
    >>> check_move("cran", frozenset({"crane"}))
    Traceback (most recent call last):
    ...
    agentgrpo.rewards.games.InvalidMove: 'cran' has 4 letters; guess a word of exactly 5 letters (no guess used)
    """
    if not isinstance(word, str):
        raise InvalidMove(f"the guess must be a string, got {type(word).__name__} {word!r}; guess a five-letter "
                          "word like \"crane\" (no guess used)")
    cleaned = word.strip().lower()
    if len(cleaned) != WORD_LENGTH:
        raise InvalidMove(f"{word!r} has {len(cleaned)} letters; guess a word of exactly {WORD_LENGTH} letters "
                          "(no guess used)")
    if not re.fullmatch(r"[a-z]+", cleaned):
        raise InvalidMove(f"{word!r} has characters other than the letters a-z (no guess used)")
    if cleaned not in allowed:
        raise InvalidMove(f"{cleaned!r} is not in the word list; guess an English five-letter word (no guess used)")
    return cleaned


@dataclass
class WordleGame:
    """One game: the secret, the guesses so far and their feedback. `guess` is the only move."""

    secret: str
    max_guesses: int = MAX_GUESSES
    allowed: frozenset[str] | None = None  # None: the shipped word list
    guesses: list[str] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)
    invalid: int = 0

    @property
    def solved(self) -> bool:
        return bool(self.guesses) and self.guesses[-1] == self.secret

    @property
    def over(self) -> bool:
        return self.solved or len(self.guesses) >= self.max_guesses

    def guess(self, word) -> str:
        """Play ``word``; returns the observation the model reads. Raises `InvalidMove` for an illegal move."""
        if self.over:
            self.invalid += 1
            raise InvalidMove("the game is over (" + ("solved" if self.solved else "no guesses left")
                              + "); reply with your final answer instead of guessing")
        try:
            word = check_move(word, self.allowed if self.allowed is not None else word_lists()[1])
        except InvalidMove:
            self.invalid += 1
            raise
        fb = wordle_feedback(word, self.secret)
        self.guesses.append(word)
        self.feedback.append(fb)
        used = f"{len(self.guesses)} of {self.max_guesses} guesses used"
        if self.solved:
            return f"{word}: {' '.join(fb)} - solved ({used}). Reply with the word."
        if self.over:
            return f"{word}: {' '.join(fb)} - no guesses left ({used}); the word was {self.secret}."
        return f"{word}: {' '.join(fb)} ({used})"


@dataclass
class GameRecord:
    """What an episode did, replayed: one entry per guess attempt (``None`` feedback: an invalid move)."""

    attempts: list[tuple[object, str | None]]
    solved: bool
    final_reply: str

    @property
    def guesses(self) -> int:
        return sum(fb is not None for _, fb in self.attempts)

    @property
    def invalid(self) -> int:
        return sum(fb is None for _, fb in self.attempts)

    def turn_rewards(self) -> list[float]:
        """Each attempt's reward: its letter score (1.0 for the solving guess), 0.0 for an invalid move."""
        return [letter_score(fb) if fb is not None else 0.0 for _, fb in self.attempts]


def executed_calls(completion, tool: str = TOOL) -> list[dict]:
    """The calls to ``tool`` that the environment ran: those followed by their tool response, in order.

    A call left without a response (cut by the token budget or the turn limit) never happened.

    >>> call = lambda w: {"type": "function", "function": {"name": "guess", "arguments": {"word": w}}}
    >>> done = [{"role": "assistant", "tool_calls": [call("crane")]}, {"role": "tool", "content": "..."},
    ...         {"role": "assistant", "tool_calls": [call("slate")]}]
    >>> executed_calls(done)
    [{'word': 'crane'}]
    """
    msgs = messages(completion)
    out = []
    for i, message in enumerate(msgs):
        if message.get("role") != "assistant":
            continue
        responses = 0
        while i + 1 + responses < len(msgs) and msgs[i + 1 + responses].get("role") == "tool":
            responses += 1
        for call in (message.get("tool_calls") or [])[:responses]:
            function = call.get("function", call) if isinstance(call, dict) else {}
            if function.get("name") == tool:
                out.append(_arguments(function.get("arguments")))
    return out


def _arguments(raw):
    import json

    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def replay_wordle(completion, secret: str, max_guesses: int = MAX_GUESSES) -> GameRecord:
    """Replay the episode's executed guesses on a fresh game with ``secret``."""
    game = WordleGame(secret, max_guesses)
    attempts = []
    for arguments in executed_calls(completion):
        word = arguments.get("word") if isinstance(arguments, dict) else arguments
        try:
            game.guess(word)
            attempts.append((word, game.feedback[-1]))
        except InvalidMove:
            attempts.append((word, None))
    return GameRecord(attempts=attempts, solved=game.solved, final_reply=completion_text(completion).strip())


def _records(completions, secret, max_guesses) -> list[GameRecord]:
    limits = max_guesses if isinstance(max_guesses, list | tuple) else [MAX_GUESSES] * len(completions)
    return [replay_wordle(c, s, int(m or MAX_GUESSES)) for c, s, m in zip(completions, secret, limits, strict=True)]


def _said(record: GameRecord, secret: str) -> bool:
    return record.final_reply.strip().strip(".!\"'").lower() == secret


def wordle_reward(completions, secret, max_guesses=None, log_metric=None, **kwargs) -> list[float]:
    """1.0 for a won game whose final reply is the word; else 0.3 x the best guess's letter score.

    >>> g = lambda w: [{"role": "assistant", "content": "", "tool_calls": [{"type": "function",
    ...     "function": {"name": "guess", "arguments": {"word": w}}}]}, {"role": "tool", "content": "(feedback)"}]
    >>> won = g("crane") + g("those") + [{"role": "assistant", "content": "those"}]
    >>> unreported = g("those") + [{"role": "assistant", "content": "done"}]
    >>> near = g("thorn") + [{"role": "assistant", "content": "thorn"}]
    >>> wordle_reward([won, unreported, near, "those"], secret=["those"] * 4)
    [1.0, 0.3, 0.18, 0.0]
    """
    records = _records(completions, secret, max_guesses)
    rewards = []
    for record, word in zip(records, secret, strict=True):
        if record.solved and _said(record, word):
            rewards.append(1.0)
        else:
            best = max((letter_score(fb) for _, fb in record.attempts if fb is not None), default=0.0)
            rewards.append(round(PROGRESS_WEIGHT * best, 6))
    if callable(log_metric) and records:
        log_game_metrics(records, log_metric)
    return rewards


def log_game_metrics(records: list[GameRecord], log_metric) -> None:
    """Turn count, guesses, invalid moves, solve rate, and each turn's mean reward (turns reached only)."""
    n = len(records)
    log_metric("wordle/turns", sum(len(r.attempts) for r in records) / n)
    log_metric("wordle/guesses", sum(r.guesses for r in records) / n)
    log_metric("wordle/invalid_moves", sum(r.invalid for r in records) / n)
    log_metric("wordle/solved", sum(r.solved for r in records) / n)
    per_turn = [r.turn_rewards() for r in records]
    for k in range(min(MAX_LOGGED_TURNS, max((len(t) for t in per_turn), default=0))):
        reached = [t[k] for t in per_turn if len(t) > k]
        log_metric(f"wordle/turn_{k + 1}_reward", sum(reached) / len(reached))


def wordle_solved(completions, secret, max_guesses=None, **kwargs) -> list[float]:
    """1.0 when a legal guess hit the secret within the guess limit (the game's true objective).

    >>> g = lambda w: [{"role": "assistant", "content": "", "tool_calls": [{"type": "function",
    ...     "function": {"name": "guess", "arguments": {"word": w}}}]}, {"role": "tool", "content": "(feedback)"}]
    >>> wordle_solved([g("those"), g("thorn"), "those"], secret=["those"] * 3)
    [1.0, 0.0, 0.0]
    """
    return [float(r.solved) for r in _records(completions, secret, max_guesses)]


def wordle_valid_moves(completions, secret, max_guesses=None, **kwargs) -> list[float]:
    """The share of guess attempts that were legal moves; 0.0 when the agent never guessed.

    >>> g = lambda w: [{"role": "assistant", "content": "", "tool_calls": [{"type": "function",
    ...     "function": {"name": "guess", "arguments": {"word": w}}}]}, {"role": "tool", "content": "(feedback)"}]
    >>> wordle_valid_moves([g("crane") + g("xqzzy"), g("crane"), "crane"], secret=["those"] * 3)
    [0.5, 1.0, 0.0]
    """
    records = _records(completions, secret, max_guesses)
    return [r.guesses / len(r.attempts) if r.attempts else 0.0 for r in records]


for _reward in (wordle_reward, wordle_solved, wordle_valid_moves):
    _reward.max_reward = 1.0  # what a won, reported game earns; `agentgrpo audit` compares probes against it


def wordle_episode_stats(completions, rows: list[dict]) -> dict[str, float]:
    """The per-step game metrics for evaluation: turns, guesses, invalid moves, solve rate, per-turn rewards.

    >>> g = [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "guess",
    ...      "arguments": {"word": "xxxxx"}}}]}, {"role": "tool", "content": "{'error': '...'}"}]
    >>> wordle_episode_stats([g], [{"secret": "those"}])["wordle/invalid_moves"]
    1.0
    """
    stats: dict[str, float] = {}
    records = _records(completions, [r["secret"] for r in rows], [r.get("max_guesses") for r in rows])
    if records:
        log_game_metrics(records, stats.__setitem__)
    return stats
