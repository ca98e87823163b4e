"""The rating fit as it was before it moved to numpy and scipy (issue 70), kept to check
the new one against: a dense Newton's method with a pure-Python Cholesky, and the full
inverse of the Hessian for the intervals and LOS. Cubic and worse in the players (400
players took 34.5 s), so only for the small fields of the tests.

The same model's constants and records as `referee.tournaments.ratings`, imported from it:
what is compared is the computation, not the priors.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from referee.tournaments.ratings import (
    NATURAL,
    PRIOR_DRAWS,
    PRIOR_SD_ELO,
    Z_95,
    Pairing,
    Rating,
    normal_cdf,
)

_NEWTON_STEPS = 100
_CONVERGED = 1e-9


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
