"""The SPRT math: the generalized sequential probability ratio test on game pairs.

A pair is two matches of the same game with the same seed, the seats swapped. Its result
for the tested player is the sum of its two scores, one of five values (0, 1/2, 1, 3/2, 2):
the pentanomial. The log-likelihood ratio of "the tested player is elo1 stronger" against
"elo0 stronger" is computed as fastchess and fishtest compute it for the logistic model:
for each hypothesis, the most likely distribution of the five results that has the expected
score of that Elo (M. Van den Bergh, "Comments on Normalized Elo", proposition 1.1), then
the likelihood of the observed pairs under each. `docs/tournaments.md` has the formulas.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from referee.tournaments.ratings import Estimate, score_elo, score_los

# A pair's score per game: its two results' sum, halved. Bins in this order.
PAIR_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)
# A bin with no pair counts as this many, as fastchess does: an empty bin would make the
# log of the likelihood infinite.
EMPTY_BIN = 1e-3
_BISECTIONS = 200
# The largest Elo difference a hypothesis may name: past it the expected score is 1 to within
# a float's precision, and no distribution of pair results has that mean.
MAX_ELO = 2000


class Verdict(StrEnum):
    """Where the test stands: still running, or stopped at one of its bounds."""

    RUNNING = "running"
    H1 = "H1 accepted"  # the tested player is elo1 stronger: the upper bound was reached
    H0 = "H0 accepted"  # it is not: the lower bound was reached


@dataclass(frozen=True)
class SprtSettings:
    """The hypotheses (Elo differences) and the error rates of a test."""

    elo0: float
    elo1: float
    alpha: float
    beta: float

    @property
    def lower(self) -> float:
        return math.log(self.beta / (1 - self.alpha))

    @property
    def upper(self) -> float:
        return math.log((1 - self.beta) / self.alpha)

    def problem(self) -> str | None:
        """Why these settings make no test, if they do not."""
        for name, elo in (("elo0", self.elo0), ("elo1", self.elo1)):
            if not -MAX_ELO <= elo <= MAX_ELO:
                return f"{name} must be between -{MAX_ELO} and {MAX_ELO}, got {elo:g}"
        if not self.elo0 < self.elo1:
            return f"elo0 ({self.elo0:g}) must be below elo1 ({self.elo1:g})"
        for name, rate in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0 < rate < 1:
                return f"{name} must be between 0 and 1, got {rate:g}"
        if self.alpha + self.beta >= 1:
            return "alpha + beta must be below 1"
        return None


@dataclass(frozen=True)
class SprtStatus:
    """The test after some pairs: their pentanomial, the LLR, the verdict, the Elo estimate."""

    settings: SprtSettings
    pentanomial: Pentanomial
    llr: float
    verdict: Verdict
    elo: Estimate

    @property
    def pairs(self) -> int:
        return sum(self.pentanomial)


Pentanomial = tuple[int, int, int, int, int]


def pair_bin(first: float, second: float) -> int:
    """The bin of a pair whose two results (points, 0 to 1) are these: 0 for LL up to 4 for
    WW."""
    return round(2 * (first + second))


def pentanomial(pairs: Iterable[tuple[float, float]]) -> Pentanomial:
    """How many pairs scored 0, 1/2, 1, 3/2 and 2 for the tested player (from its two results)."""
    bins = [0] * 5
    for first, second in pairs:
        bins[pair_bin(first, second)] += 1
    return (bins[0], bins[1], bins[2], bins[3], bins[4])


def pair_elo(counts: Sequence[int]) -> Estimate:
    """The Elo difference, with its 95% margin, from a pentanomial: the pairwise Elo of the
    pairs' scores (`ratings.score_elo`), as fastchess computes it for paired openings."""
    return score_elo(dict(zip(PAIR_SCORES, map(float, counts), strict=True)))


def pair_los(counts: Sequence[int]) -> float:
    """The likelihood of superiority from a pentanomial (`ratings.score_los` of the pairs)."""
    return score_los(dict(zip(PAIR_SCORES, map(float, counts), strict=True)))


def expected_score(elo: float) -> float:
    """The score an Elo difference predicts, by Elo's logistic curve."""
    return 1 / (1 + 10 ** (-elo / 400))


def llr(counts: Sequence[int], elo0: float, elo1: float) -> float:
    """The log-likelihood ratio of elo1 against elo0 given a pentanomial; 0 with no pairs."""
    if sum(counts) == 0:
        return 0.0
    observed = [n if n > 0 else EMPTY_BIN for n in counts]
    total = sum(observed)
    frequency = [n / total for n in observed]
    p0 = _most_likely(frequency, expected_score(elo0))
    p1 = _most_likely(frequency, expected_score(elo1))
    return total * sum(
        f * (math.log(b) - math.log(a)) for f, a, b in zip(frequency, p0, p1, strict=True)
    )


def _most_likely(frequency: Sequence[float], score: float) -> list[float]:
    """The distribution over PAIR_SCORES with mean `score` under which the observed
    frequencies are most likely: p_i = f_i / (1 + theta (a_i - score)), theta the root of
    sum f_i (a_i - score) / (1 + theta (a_i - score)) = 0, found by bisection."""
    shifted = [a - score for a in PAIR_SCORES]

    def slope(theta: float) -> float:
        return sum(f * d / (1 + theta * d) for f, d in zip(frequency, shifted, strict=True))

    # The root lies where every 1 + theta d stays positive; the slope falls across it.
    low, high = -1 / max(shifted), -1 / min(shifted)
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        if slope(middle) > 0:
            low = middle
        else:
            high = middle
    theta = (low + high) / 2
    return [f / (1 + theta * d) for f, d in zip(frequency, shifted, strict=True)]


def status(settings: SprtSettings, pairs: Iterable[tuple[float, float]]) -> SprtStatus:
    """The test after these pairs (each the tested player's two results)."""
    return judged(settings, pentanomial(pairs))


def judged(settings: SprtSettings, counts: Pentanomial) -> SprtStatus:
    """The test after pairs whose pentanomial is `counts`."""
    ratio = llr(counts, settings.elo0, settings.elo1)
    verdict = Verdict.RUNNING
    if ratio >= settings.upper:
        verdict = Verdict.H1
    elif ratio <= settings.lower:
        verdict = Verdict.H0
    return SprtStatus(settings, counts, ratio, verdict, pair_elo(counts))
