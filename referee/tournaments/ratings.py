"""The ratings math: what goals make a win, Elo from a score, and one fit of all results.

Every number here is finite: a player who won everything gets a finite rating with a finite
interval, because the fit has a prior and a score of 0 or 1 is bounded before it is turned
into Elo. `docs/tournaments.md` gives each formula.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve, cholesky
from scipy.linalg.lapack import dtrtri
from scipy.sparse import coo_array, csr_array
from scipy.sparse.csgraph import connected_components
from scipy.special import expit
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]  # no types shipped

Z_95 = 1.959964  # two-sided 95% quantile of the normal distribution
# One Elo point in the natural units of the logistic model: P(win) = 1 / (1 + exp(-d)).
NATURAL = math.log(10) / 400
# BayesElo's prior: two virtual draws between every two players who met.
PRIOR_DRAWS = 2.0
# A wide normal prior on each rating, in Elo: it only matters for players that no chain of
# results connects, which it keeps on one scale (with intervals that say how little is known).
PRIOR_SD_ELO = 4000.0
_PRECISION = 1 / (PRIOR_SD_ELO * NATURAL) ** 2  # the prior's, in natural units
_NEWTON_STEPS = 100
_CONVERGED = 1e-9  # the largest step, in natural units, of a converged Newton's method
# Conjugate gradients solve a Newton step to this residual, relative to the first.
_SOLVED = 1e-10
# Columns of a dense matrix combined at a time: a block of n of them, not n^2.
_BLOCK = 256


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


def score_los(counts: Mapping[float, float]) -> float:
    """The likelihood that a player is the stronger from how many results had each score (0
    to 1), as fastchess computes it for pairs of games: Phi((mean - 1/2) / standard error),
    the standard error the results' standard deviation over the square root of their
    number; 0.5 with no results, and 0 or 1 where they do not vary."""
    total = sum(counts.values())
    if total <= 0:
        return 0.5
    mean = sum(score * n for score, n in counts.items()) / total
    variance = sum(n * (score - mean) ** 2 for score, n in counts.items()) / total
    if variance <= 0:
        return 0.5 if mean == 0.5 else float(mean > 0.5)
    return normal_cdf((mean - 0.5) / math.sqrt(variance / total))


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

    Growth, for n players and m pairs that met: a Newton step is O(m) and a sparse solve by
    conjugate gradients, O(m) an iteration (a dense one, O(n^3), where those stall); the
    intervals and LOS one dense Cholesky factorisation and the inverse of its factor, O(n^3)
    at LAPACK's speed, in O(n^2) memory.
    """
    names, met = _met(pairings)
    size = len(names)
    if size == 0:
        return []
    anchored = names.index(anchor) if anchor is not None and anchor in names else None
    # One thread of linear algebra: a fit shares the machine with the matches being played and
    # the arena's service, and OpenBLAS's threads, waiting on cores that are busy, made a fit
    # of 200 players 25 times slower and one of 3,000 players 2.6 (docs/benchmarks.md).
    with threadpool_limits(limits=1, user_api="blas"):
        theta = _mode(met, size)
        elo = (theta - (theta.mean() if anchored is None else theta[anchored])) / NATURAL
        ranked = sorted(range(size), key=lambda i: (-elo[i], names[i]))
        spread, apart = _spreads(met, theta, np.array(ranked, dtype=np.intp), anchored)
    ratings = []
    for rank, i in enumerate(ranked):
        los = None
        if rank + 1 < size:
            difference = theta[i] - theta[ranked[rank + 1]]
            los = normal_cdf(difference / apart[rank]) if apart[rank] > 0 else 0.5
        margin = Z_95 * float(spread[rank]) / NATURAL
        rating = float(elo[i])
        ratings.append(Rating(names[i], rating, rating - margin, rating + margin, los))
    return ratings


@dataclass(frozen=True)
class _Met:
    """Each unordered pair of players that met, once: the lower index, the higher, their games
    with the prior's virtual draws, and the lower one's points with half of those draws."""

    low: np.ndarray
    high: np.ndarray
    games: np.ndarray
    points: np.ndarray

    def terms(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """At `theta`, each pair's points less its expected points (its term's gradient along
        the lower player) and its term's curvature."""
        expected = expit(theta[self.low] - theta[self.high])
        return self.points - self.games * expected, self.games * expected * (1 - expected)

    def diagonal(self, curvature: np.ndarray, size: int) -> np.ndarray:
        """The diagonal of H, the negative Hessian of the log posterior: the prior's precision
        and each player's pairs' curvature."""
        return (
            _PRECISION
            + np.bincount(self.low, curvature, size)
            + np.bincount(self.high, curvature, size)
        )


def _met(pairings: Iterable[Pairing]) -> tuple[list[str], _Met]:
    """The players in order of first appearance, and the pairs that met. A pairing of a player
    with itself names the player but is no result."""
    index: dict[str, int] = {}
    rows = [
        (
            index.setdefault(p.first, len(index)),
            index.setdefault(p.second, len(index)),
            p.games,
            p.points,
        )
        for p in pairings
    ]
    table = np.array(rows, dtype=float).reshape(-1, 4)
    table = table[table[:, 0] != table[:, 1]]
    first, second = table[:, 0].astype(np.intp), table[:, 1].astype(np.intp)
    games, points_ = table[:, 2], table[:, 3]
    size = max(len(index), 1)
    # Each pair's games, from either side, summed under one key, the lower player's.
    pairs, which = np.unique(
        np.minimum(first, second) * size + np.maximum(first, second), return_inverse=True
    )
    lows_points = np.where(first < second, points_, games - points_)
    return list(index), _Met(
        pairs // size,
        pairs % size,
        PRIOR_DRAWS + np.bincount(which, games, len(pairs)),
        PRIOR_DRAWS / 2 + np.bincount(which, lows_points, len(pairs)),
    )


def _mode(met: _Met, size: int) -> np.ndarray:
    """The ratings (natural units) at the posterior's mode, by Newton's method from 0."""
    components = connected_components(
        coo_array((np.ones(len(met.low)), (met.low, met.high)), shape=(size, size)),
        directed=False,
    )[1]
    theta = np.zeros(size)
    sparse = True
    for _ in range(_NEWTON_STEPS):
        residual, curvature = met.terms(theta)
        gradient = (
            -_PRECISION * theta
            + np.bincount(met.low, residual, size)
            - np.bincount(met.high, residual, size)
        )
        step = _sparse_solve(met, curvature, components, gradient) if sparse else None
        if step is None:
            # The field is badly conditioned for conjugate gradients (a long chain of
            # players), and stays so from step to step: a dense solve from here on.
            sparse = False
            hessian = _dense_hessian(met, curvature, np.arange(size))
            step = cho_solve(cho_factor(hessian, lower=True, overwrite_a=True), gradient)
        theta += step
        if np.max(np.abs(step)) < _CONVERGED:
            break
    return theta


def _sparse_solve(
    met: _Met, curvature: np.ndarray, components: np.ndarray, gradient: np.ndarray
) -> np.ndarray | None:
    """The Newton step: x with H @ x = gradient, H the negative Hessian; None where conjugate
    gradients take more steps than there are players, which in exact arithmetic they never
    need: a field that badly conditioned is solved more surely by a dense factorisation.

    H is the prior's precision on the diagonal plus the pairs' weighted Laplacian, so each
    part of the field that no result connects to the rest (each connected component) has its
    mean as an eigenvector of H, of eigenvalue the precision, tiny beside the others. That
    part of the step is solved exactly; the rest, orthogonal to it, by conjugate gradients
    with the diagonal as the preconditioner, kept in that orthogonal space.
    """
    size = len(gradient)
    diagonal = met.diagonal(curvature, size)
    hessian = csr_array(
        (
            np.concatenate([-curvature, -curvature, diagonal]),
            (
                np.concatenate([met.low, met.high, np.arange(size)]),
                np.concatenate([met.high, met.low, np.arange(size)]),
            ),
        ),
        shape=(size, size),
    )
    counts = np.bincount(components)

    def level(vector: np.ndarray) -> np.ndarray:
        """Each component's mean of `vector`, for each of its players."""
        return (np.bincount(components, vector) / counts)[components]

    residual = gradient - level(gradient)
    solved = level(gradient) / _PRECISION
    tolerance = _SOLVED * np.linalg.norm(residual)
    direction = np.zeros(size)
    previous = 1.0
    for _ in range(size):
        if np.linalg.norm(residual) <= tolerance:
            return solved
        preconditioned = residual / diagonal
        preconditioned -= level(preconditioned)
        product = residual @ preconditioned
        direction = preconditioned + (product / previous) * direction
        previous = product
        image = hessian @ direction
        length = product / (direction @ image)
        solved += length * direction
        residual -= length * image
    return solved if np.linalg.norm(residual) <= tolerance else None


def _dense_hessian(met: _Met, curvature: np.ndarray, position: np.ndarray) -> np.ndarray:
    """H, the negative Hessian, as a dense matrix with each player's row and column at its
    `position`."""
    size = len(position)
    hessian = np.zeros((size, size), order="F")
    low, high = position[met.low], position[met.high]
    hessian[low, high] = -curvature
    hessian[high, low] = -curvature
    hessian[position, position] = met.diagonal(curvature, size)
    return hessian


def _spreads(
    met: _Met, theta: np.ndarray, ranked: np.ndarray, anchored: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """In rank order, in natural units: the standard deviation of each rating less the
    anchor (the mean rating, or the `anchored` player's), and of each rating less the next.

    The covariance is the inverse of H, the negative Hessian at the mode: W.T @ W, W the
    inverse of H's lower Cholesky factor. A contrast c of the ratings has the variance
    |W @ c|^2, and W @ c is c's combination of W's columns; H's inverse is never formed, and
    the columns are combined a block at a time. H is laid out in rank order, so that the
    columns of neighbours in the ranking are neighbours too.
    """
    size = len(theta)
    position = np.empty(size, dtype=np.intp)
    position[ranked] = np.arange(size)
    _, curvature = met.terms(theta)
    lower = cholesky(
        _dense_hessian(met, curvature, position), lower=True, overwrite_a=True, check_finite=False
    )
    inverse, _ = dtrtri(lower, lower=1, overwrite_c=1)
    origin = inverse.mean(axis=1) if anchored is None else inverse[:, position[anchored]].copy()
    spread = np.empty(size)
    apart = np.empty(size - 1)
    for start in range(0, size, _BLOCK):
        stop = min(start + _BLOCK, size)
        centred = inverse[:, start:stop] - origin[:, None]
        spread[start:stop] = np.sqrt(np.einsum("ij,ij->j", centred, centred))
        last = min(stop, size - 1)
        between = inverse[:, start:last] - inverse[:, start + 1 : last + 1]
        apart[start:last] = np.sqrt(np.einsum("ij,ij->j", between, between))
    return spread, apart
