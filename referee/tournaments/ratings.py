"""The ratings math: what goals make a win, Elo from a score, and one fit of all results.

Every number here is finite: a player who won everything gets a finite rating with a finite
interval, because the fit has a prior and a score of 0 or 1 is bounded before it is turned
into Elo. `docs/tournaments.md` gives each formula.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

Z_95 = 1.959964  # two-sided 95% quantile of the normal distribution
# One Elo point in the natural units of the logistic model: P(win) = 1 / (1 + exp(-d)).
NATURAL = math.log(10) / 400
# BayesElo's prior: two virtual draws between every two players who met.
PRIOR_DRAWS = 2.0
# A wide normal prior on each rating, in Elo: it only matters for players that no chain of
# results connects, which it keeps on one scale (with intervals that say how little is known).
PRIOR_SD_ELO = 4000.0
_NEWTON_STEPS = 100
_CONVERGED = 1e-9


def points(mine: int, theirs: int) -> float:
    """A pairing's result for the first of two players, from their goals: 1, 1/2 or 0.

    The one rule for every game: the higher goal wins, equal goals draw. Goals that are
    neither 100 nor 0 (blocker-parallel's 50 against 0, ticblock's 75 against 25) are
    compared like any others.
    """
    return 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0


def elo_of_score(score: float) -> float:
    """The Elo difference that predicts an expected score strictly between 0 and 1."""
    return -400 * math.log10(1 / score - 1)


def normal_cdf(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


@dataclass(frozen=True)
class Estimate:
    """An Elo difference and the half-width of its 95% interval."""

    elo: float
    margin: float


def score_elo(counts: Mapping[float, float]) -> Estimate:
    """Elo, with a 95% margin, from how many results had each score (0 to 1), as cutechess
    and fastchess compute it: Elo of the mean score, the margin half the width of the Elo
    interval of the score's 95% interval (mean +- 1.96 standard errors).

    Kept finite: a mean of 0 or 1 gets half a result of the other extreme added first, and an
    interval bound past 0 or 1 is taken a quarter of a result from it.
    """
    counts = {score: n for score, n in counts.items() if n > 0}
    total = sum(counts.values())
    if total == 0:
        return Estimate(0.0, 0.0)
    mean = sum(score * n for score, n in counts.items()) / total
    if mean in (0.0, 1.0):
        other = 1.0 - mean
        counts[other] = counts.get(other, 0.0) + 0.5
        total += 0.5
        mean = sum(score * n for score, n in counts.items()) / total
    variance = sum(n * (score - mean) ** 2 for score, n in counts.items()) / total
    spread = Z_95 * math.sqrt(variance / total)
    edge = 0.25 / total
    low = elo_of_score(max(mean - spread, edge))
    high = elo_of_score(min(mean + spread, 1 - edge))
    return Estimate(elo_of_score(mean), (high - low) / 2)


def pairwise(wins: float, draws: float, losses: float) -> Estimate:
    """The Elo of one player against another from their wins, draws and losses."""
    return score_elo({1.0: wins, 0.5: draws, 0.0: losses})


def pairwise_los(wins: float, losses: float) -> float:
    """The likelihood that the first player is the stronger, from wins and losses (draws say
    nothing of it), as cutechess computes it; 0.5 with neither."""
    if wins + losses == 0:
        return 0.5
    return normal_cdf((wins - losses) / math.sqrt(wins + losses))


@dataclass(frozen=True)
class Rating:
    """A player's rating on the scale of one fit: Elo, its 95% interval, and the likelihood
    that it is stronger than the player ranked next below it (None for the last)."""

    player: str
    elo: float
    low: float
    high: float
    los_next: float | None = None

    @property
    def margin(self) -> float:
        return (self.high - self.low) / 2


@dataclass(frozen=True)
class Pairing:
    """Results between two players: how many, and the points the first one scored."""

    first: str
    second: str
    games: float
    points: float


def fit(pairings: Iterable[Pairing], anchor: str | None = None) -> list[Rating]:
    """One rating per player from all results at once, best first.

    The model is Bradley-Terry with Elo's logistic curve, a draw half a win and half a loss;
    the ratings are the posterior mode with the priors above, found by Newton's method. The
    scale is anchored by the mean rating at 0, or by `anchor`'s rating at 0. Intervals come
    from the curvature of the log posterior at the mode (its inverse is the covariance).
    """
    games: dict[tuple[int, int], float] = {}
    scored: dict[tuple[int, int], float] = {}
    index: dict[str, int] = {}
    for pairing in pairings:
        a = index.setdefault(pairing.first, len(index))
        b = index.setdefault(pairing.second, len(index))
        if a == b:
            continue
        games[(a, b)] = games.get((a, b), 0.0) + pairing.games
        scored[(a, b)] = scored.get((a, b), 0.0) + pairing.points
    names = list(index)
    size = len(names)
    if size == 0:
        return []
    # Each unordered pair once: its games, with the prior's virtual draws, and a's points.
    pairs: dict[tuple[int, int], tuple[float, float]] = {}
    for (a, b), n in games.items():
        key, mine = ((a, b), scored[(a, b)]) if a < b else ((b, a), n - scored[(a, b)])
        total, points_ = pairs.get(key, (PRIOR_DRAWS, PRIOR_DRAWS / 2))
        pairs[key] = (total + n, points_ + mine)
    theta = [0.0] * size
    precision = 1 / (PRIOR_SD_ELO * NATURAL) ** 2
    for _ in range(_NEWTON_STEPS):
        gradient, hessian = _derivatives(theta, pairs, precision)
        step = _solve(_cholesky(hessian), gradient)
        theta = [t + s for t, s in zip(theta, step, strict=True)]
        if max(abs(s) for s in step) < _CONVERGED:
            break
    _, hessian = _derivatives(theta, pairs, precision)
    covariance = _inverse(hessian)
    base = (
        [1.0 / size] * size if anchor is None or anchor not in index else _unit(index[anchor], size)
    )

    def contrast(weights: Sequence[float]) -> tuple[float, float]:
        """A linear combination of the ratings, in Elo, and its standard deviation."""
        value = sum(w * t for w, t in zip(weights, theta, strict=True))
        variance = sum(
            weights[i] * weights[j] * covariance[i][j] for i in range(size) for j in range(size)
        )
        return value / NATURAL, math.sqrt(max(variance, 0.0)) / NATURAL

    rated = []
    for i, name in enumerate(names):
        elo, sd = contrast([(1.0 if j == i else 0.0) - base[j] for j in range(size)])
        rated.append((elo, sd, i, name))
    rated.sort(key=lambda r: (-r[0], r[3]))
    ratings = []
    for rank, (elo, sd, i, name) in enumerate(rated):
        los = None
        if rank + 1 < len(rated):
            j = rated[rank + 1][2]
            difference, spread = contrast(
                [(1.0 if k == i else 0.0) - (1.0 if k == j else 0.0) for k in range(size)]
            )
            los = normal_cdf(difference / spread) if spread > 0 else 0.5
        ratings.append(Rating(name, elo, elo - Z_95 * sd, elo + Z_95 * sd, los))
    return ratings


def _unit(i: int, size: int) -> list[float]:
    return [1.0 if j == i else 0.0 for j in range(size)]


def _derivatives(
    theta: Sequence[float], pairs: Mapping[tuple[int, int], tuple[float, float]], precision: float
) -> tuple[list[float], list[list[float]]]:
    """The gradient of the log posterior, and the negative of its Hessian (positive definite)."""
    size = len(theta)
    gradient = [-precision * t for t in theta]
    hessian = [[precision if i == j else 0.0 for j in range(size)] for i in range(size)]
    for (a, b), (total, mine) in pairs.items():
        p = 1 / (1 + math.exp(theta[b] - theta[a]))
        gradient[a] += mine - total * p
        gradient[b] -= mine - total * p
        curvature = total * p * (1 - p)
        hessian[a][a] += curvature
        hessian[b][b] += curvature
        hessian[a][b] -= curvature
        hessian[b][a] -= curvature
    return gradient, hessian


def _solve(lower: Sequence[Sequence[float]], vector: Sequence[float]) -> list[float]:
    """x with M @ x = vector, given the Cholesky factor of M (M = lower @ lower.T)."""
    size = len(vector)
    y = [0.0] * size
    for i in range(size):
        y[i] = (vector[i] - sum(lower[i][k] * y[k] for k in range(i))) / lower[i][i]
    x = [0.0] * size
    for i in reversed(range(size)):
        x[i] = (y[i] - sum(lower[k][i] * x[k] for k in range(i + 1, size))) / lower[i][i]
    return x


def _inverse(matrix: Sequence[Sequence[float]]) -> list[list[float]]:
    size = len(matrix)
    lower = _cholesky(matrix)
    columns = [_solve(lower, _unit(i, size)) for i in range(size)]
    return [[columns[j][i] for j in range(size)] for i in range(size)]


def _cholesky(matrix: Sequence[Sequence[float]]) -> list[list[float]]:
    """The lower factor of a symmetric positive definite matrix."""
    size = len(matrix)
    lower = [[0.0] * size for _ in range(size)]
    for i in range(size):
        for j in range(i + 1):
            total = matrix[i][j] - sum(lower[i][k] * lower[j][k] for k in range(j))
            lower[i][j] = math.sqrt(total) if i == j else total / lower[j][j]
    return lower
