"""The `wordle` agent task: a multi-turn game where every guess is a tool call and the environment answers.

The agent guesses a secret five-letter word with the ``guess(word)`` tool; each guess comes back as
per-letter feedback (``G`` right letter and spot, ``Y`` in the word elsewhere, ``X`` not in it), six guesses
at most. An illegal move (not five letters, not in the word list, not a string, a missing argument, a guess
after the game ended) is an observation for the model (TRL returns ``{"error": ...}`` and counts a tool
failure), never a crash, and uses no guess. The episode ends with the agent's final reply: the word.

Rules, replay and rewards live in `agentgrpo.rewards.games`; this module has the data, the environment,
the gold play and the task. No maintained game library fits offline: ``textarena``'s Wordle downloads NLTK
corpora on import (network), so this is our own implementation with the word lists shipped in
``agentgrpo/tasks/data`` (SCOWL via Debian ``wamerican``; licence in the files' headers).

``wordle-easy`` (the tiny CPU model's variant, `agentgrpo demo --task wordle-easy`): the same game, rules,
feedback, word list for legal guesses and rewards, but the secret is one of ``EASY_SECRETS`` words (a fixed
seeded draw from the answer list), and the demonstrations' solver picks among those and ``EASY_DECOYS`` more
words (legal guesses the secret never is; none since version 2). Like Wordle's own fixed answer list, the
secret list is the game's world: the eval plays fresh games on the same secrets (sampled decoding; no secret is
held out). A 1M-parameter model memorises its answer list and cannot guess a word it never saw as an answer:
on 16 held-out secrets the first warm start solved 0.5% [0.1%, 2.8%] of 200 sampled games; over 32 secrets it
guessed about at random (11%); over 16 it reads the opener's feedback (docs/tasks.md, "The tiny model").

Version history (bump ``VERSION`` when scoring changes):
  1: first release.
"""

from __future__ import annotations

import dataclasses
import functools
import random

from agentgrpo.rewards.games import (
    MAX_GUESSES,
    TOOL,
    WordleGame,
    word_lists,
    wordle_episode_stats,
    wordle_feedback,
    wordle_reward,
    wordle_solved,
    wordle_valid_moves,
)
from agentgrpo.tasks.base import Task

VERSION = 1
EVAL_SEED = 20_251_203
EVAL_SIZE = 300  # held-out secrets; training never uses them
OPENERS = ("crane", "slate", "adieu", "stare", "roast")
SOLVER_VOCABULARY = 400
SYSTEM_PROMPT = (
    "You are playing Wordle. Find the secret five-letter English word in at most 6 guesses. Make each guess "
    "with the guess tool. Feedback per letter: G = right letter, right spot; Y = in the word, other spot; "
    "X = not in the word. When you have found it, reply with the word alone."
)


# --- data -----------------------------------------------------------------------------------------------


def _row(secret: str, max_guesses: int = MAX_GUESSES, tag: str = "") -> dict:
    return {
        "id": f"wordle/{secret}{tag}",
        "prompt": [{"role": "system", "content": SYSTEM_PROMPT},
                   {"role": "user", "content": "Guess the secret word."}],
        "secret": secret,
        "max_guesses": max_guesses,
        "answer": secret,  # the final reply a won game ends with (what the reward audit's probes vary)
    }


def _split() -> tuple[list[str], list[str]]:
    """(training secrets, held-out secrets): a fixed seeded split of the shipped answer list."""
    answers = sorted(word_lists()[0])
    random.Random(EVAL_SEED).shuffle(answers)
    return answers[EVAL_SIZE:], answers[:EVAL_SIZE]


def eval_problems(n: int = 200) -> list[dict]:
    """The first ``n`` of the fixed held-out secrets."""
    return [_row(s) for s in _split()[1][:n]]


def train_problems(n: int, seed: int) -> list[dict]:
    """``n`` games on training secrets (shuffled by ``seed``; cycled when ``n`` exceeds them)."""
    pool, rng, rows = _split()[0], random.Random(seed), []
    while len(rows) < n:
        batch = list(pool)
        rng.shuffle(batch)
        rows += [_row(s) for s in batch]
    return rows[:n]


# --- the environment ------------------------------------------------------------------------------------


class WordleEnv:
    """TRL ``environment_factory`` environment: one game per rollout; ``guess`` is the model's one tool."""

    def __init__(self) -> None:
        self.game: WordleGame | None = None
        self.calls = 0
        self.failures = 0

    def reset(self, **row) -> None:
        if "secret" not in row:
            raise ValueError("wordle: the row has no 'secret' column; build rows with wordle.train_problems")
        self.game = WordleGame(row["secret"], int(row.get("max_guesses") or MAX_GUESSES))
        self.calls = 0
        self.failures = 0

    def guess(self, word: str) -> str:
        """Guess the secret five-letter word.

        Args:
            word: An English word of exactly five letters, for example "crane".

        Returns:
            Feedback per letter: G (right spot), Y (in the word, other spot) or X (not in the word).
        """
        self.calls += 1
        if self.game is None:
            self.failures += 1
            raise RuntimeError("no game in progress (reset was not called)")
        try:
            return self.game.guess(word)
        except ValueError:
            self.failures += 1
            raise


# --- gold play and demonstrations -----------------------------------------------------------------------


def _call(word: str) -> dict:
    return {"role": "assistant", "content": "",
            "tool_calls": [{"type": "function", "function": {"name": TOOL, "arguments": {"word": word}}}]}


def play(row: dict, guesses: list[str]) -> list[dict]:
    """The messages of playing ``guesses`` (stopping once solved), each answered exactly as `WordleEnv` does."""
    env = WordleEnv()
    env.reset(**row)
    out = []
    for word in guesses:
        out += [_call(word), {"role": "tool", "name": TOOL, "content": env.guess(word)}]
        if env.game.over:
            break
    return out + [{"role": "assistant", "content": row["secret"]}]


def solver_guesses(secret: str, rng: random.Random, max_guesses: int = MAX_GUESSES,
                   vocabulary: int = SOLVER_VOCABULARY, words: tuple[str, ...] | None = None) -> list[str]:
    """A player that only makes consistent guesses: an opener, then a random word still consistent with all
    feedback so far, from a random ``vocabulary`` of the secret words (which holds the secret; kept small so
    thousands of demonstrations build in seconds), or from ``words`` when given (wordle-easy's pool)."""
    if words is not None:
        candidates = list(words)
    else:
        candidates = rng.sample([w for w in word_lists()[0] if w != secret], vocabulary - 1) + [secret]
    guesses = [rng.choice(OPENERS)]
    while guesses[-1] != secret and len(guesses) < max_guesses:
        fb = wordle_feedback(guesses[-1], secret)
        candidates = [w for w in candidates if wordle_feedback(guesses[-1], w) == fb and w != guesses[-1]]
        guesses.append(rng.choice(candidates))
    return guesses


def demonstration(row: dict, use_tool: bool) -> dict:
    """An SFT example: an honest game (the game needs the tool, so ``use_tool`` does not change it).

    The solver sometimes runs out of guesses; the demonstration then ends with the word it was told.
    """
    rng = random.Random(row["secret"])
    return {"messages": list(row["prompt"]) + play(row, solver_guesses(row["secret"], rng, row["max_guesses"]))}


def gold_completion(row: dict) -> list[dict]:
    """What a perfect agent writes: an opener, then the secret, then the word as the final reply."""
    opener = next(w for w in OPENERS if w != row["secret"])
    return play(row, [opener, row["secret"]])


TASK = Task(
    name="wordle",
    version=VERSION,
    description="Wordle, multi-turn: each guess is a `guess` tool call answered with per-letter feedback; "
                "reward = won and reported (+ a proxy for letters found); shadow = won.",
    environment_factory=WordleEnv,
    reward_funcs={"wordle_reward": wordle_reward, "wordle_valid_moves": wordle_valid_moves,
                  "wordle_solved": wordle_solved},
    default_rewards=[{"name": "wordle_reward", "weight": 1.0}, {"name": "wordle_valid_moves", "weight": 0.1},
                     {"name": "wordle_solved", "weight": 0.0}],
    train_problems=train_problems,
    eval_problems=eval_problems,
    demonstration=demonstration,
    gold_completion=gold_completion,
    success_reward="wordle_solved",
    columns=("id", "prompt", "secret", "max_guesses", "answer"),
    episode_stats=wordle_episode_stats,
)


# --- wordle-easy: the same game over a small list of secrets (the tiny CPU model's variant) ---------------

EASY_SECRETS = 16  # the secret list, a fixed seeded draw from the answer list (32 was beyond the tiny model)
EASY_DECOYS = 0  # further words of the draw: legal guesses of the demonstrations' solver, never a secret
EASY_VERSION = 2  # 2: 16 secrets, no decoys (1: 32 secrets and 16 decoys); part of the tiny-random cache key


@functools.cache
def easy_pool() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(secrets, decoys) of wordle-easy: a fixed seeded draw from the answer list."""
    pool = sorted(word_lists()[0])
    random.Random(EVAL_SEED + 1).shuffle(pool)
    pool = pool[:EASY_SECRETS + EASY_DECOYS]
    return tuple(pool[EASY_DECOYS:]), tuple(pool[:EASY_DECOYS])


def easy_eval_problems(n: int = 128) -> list[dict]:
    """``n`` eval games over the secret list, cycled (row ``k`` plays secret ``k mod EASY_SECRETS``): with sampled
    decoding each repeat is another draw of the game; greedy repeats are identical."""
    secrets = easy_pool()[0]
    return [_row(secrets[k % len(secrets)], tag=f"#eval{k // len(secrets)}") for k in range(n)]


def easy_train_problems(n: int, seed: int) -> list[dict]:
    """``n`` games on wordle-easy's secrets (shuffled by ``seed``, cycled)."""
    pool, rng, rows = easy_pool()[0], random.Random(seed), []
    while len(rows) < n:
        batch = list(pool)
        rng.shuffle(batch)
        rows += [_row(s, tag=f"#{seed}.{len(rows) + i}") for i, s in enumerate(batch)]
    return rows[:n]


def easy_demonstration(row: dict, use_tool: bool) -> dict:
    """An honest game whose solver only guesses words of wordle-easy's draw (secrets and decoys)."""
    rng = random.Random(row["id"])  # the id numbers the game: every game of a secret is played afresh
    words = easy_pool()[0] + easy_pool()[1]
    guesses = solver_guesses(row["secret"], rng, row["max_guesses"], words=words)
    return {"messages": list(row["prompt"]) + play(row, guesses)}


EASY_TASK = dataclasses.replace(
    TASK,
    name="wordle-easy",
    description=f"Wordle over a list of {EASY_SECRETS} secret words, same rules and rewards; eval = fresh games on "
                "the same secrets: the tiny CPU model's variant (agentgrpo demo --task wordle-easy).",
    train_problems=easy_train_problems,
    eval_problems=easy_eval_problems,
    demonstration=easy_demonstration,
    version=EASY_VERSION,
)
