"""The ratings and SPRT arithmetic, checked against figures computed here independently:
by hand, by scipy's general-purpose optimizers on the same likelihoods, or by the fit as it
was before it moved to numpy and scipy (tests/support/ratings_reference.py)."""

from __future__ import annotations

import math
import random

import pytest
from scipy import optimize

from referee.games import get_game
from referee.tournaments.ratings import PRIOR_SD_ELO, Pairing, fit, points
from referee.tournaments.sprt import PAIR_SCORES, SprtSettings, Verdict, llr, pentanomial, status
from tests.support.ratings_reference import fit as reference_fit

NATURAL = math.log(10) / 400


def test_the_higher_goal_wins_in_every_game() -> None:
    # blocker-parallel: a bridge on one board while the other has blanks is 50 against 0.
    assert points(50, 0) == 1.0 and points(0, 50) == 0.0
    # ticblock: the tic-tac-toe draw and the bridge, 75 against 25; double-tictactoe 50-50.
    assert points(75, 25) == 1.0 and points(50, 50) == 0.5
    assert get_game("blocker-parallel").roles == ("crosser", "blocker")


def log_posterior(theta: list[float], results: list[tuple[int, int, float, float]]) -> float:
    """The model written out: logistic Bradley-Terry on points, 2 virtual draws per pair that
    met, a normal prior of PRIOR_SD_ELO on each rating."""
    total = -sum(t * t for t in theta) / (2 * (PRIOR_SD_ELO * NATURAL) ** 2)
    met: dict[tuple[int, int], list[float]] = {}
    for a, b, games, scored in results:
        pair = met.setdefault((min(a, b), max(a, b)), [0.0, 0.0])
        pair[0] += games
        pair[1] += scored if a < b else games - scored
    for (a, b), (games, scored) in met.items():
        p = 1 / (1 + math.exp(theta[b] - theta[a]))
        total += (scored + 1) * math.log(p) + (games - scored + 1) * math.log(1 - p)
    return total


def test_a_player_who_won_everything_has_a_finite_rating_and_interval() -> None:
    ratings = {r.player: r for r in fit([Pairing("ann", "bob", 10, 10)])}
    ann, bob = ratings["ann"], ratings["bob"]
    # Near 400 log10(11) (the virtual draws alone: 11 points against 1), on either side of 0.
    assert ann.elo - bob.elo == pytest.approx(400 * math.log10(11), abs=1.0)
    assert ann.elo == pytest.approx(-bob.elo)
    assert math.isfinite(ann.low) and math.isfinite(ann.high) and ann.low < ann.elo < ann.high
    assert bob.high < 0 < ann.low
    # The mode, found here by a root finder on the derivative of the log posterior.
    mode = optimize.brentq(
        lambda d: (
            log_posterior([d + 1e-6, -d], [(0, 1, 10, 10)])
            - log_posterior([d - 1e-6, -d], [(0, 1, 10, 10)])
        ),
        0.1,
        10,
    )
    assert ann.elo == pytest.approx(mode / NATURAL, abs=0.05)


def test_a_fit_of_three_players_is_the_posterior_mode_with_its_curvature() -> None:
    results = [(0, 1, 6, 4.5), (1, 2, 6, 2.0), (0, 2, 4, 3.0), (2, 0, 4, 2.5)]
    pairings = [Pairing("abc"[a], "abc"[b], games, scored) for a, b, games, scored in results]
    ratings = {r.player: r for r in fit(pairings, anchor="c")}
    found = optimize.minimize(
        lambda x: -log_posterior([x[0], x[1], 0.0], results), [0.0, 0.0], method="BFGS", tol=1e-10
    )
    # Anchored at c: a shift of all three changes only the prior, which is negligible here.
    assert ratings["c"].elo == 0 and ratings["c"].margin == 0
    assert ratings["a"].elo == pytest.approx(found.x[0] / NATURAL, abs=1.0)
    assert ratings["b"].elo == pytest.approx(found.x[1] / NATURAL, abs=1.0)
    # The interval: 1.96 standard deviations from the inverse of the negative Hessian.
    step = 1e-4
    x = list(found.x)

    def f(a: float, b: float) -> float:
        return log_posterior([a, b, 0.0], results)

    h_aa = (f(x[0] + step, x[1]) - 2 * f(*x) + f(x[0] - step, x[1])) / step**2
    h_bb = (f(x[0], x[1] + step) - 2 * f(*x) + f(x[0], x[1] - step)) / step**2
    h_ab = (
        f(x[0] + step, x[1] + step)
        - f(x[0] + step, x[1] - step)
        - f(x[0] - step, x[1] + step)
        + f(x[0] - step, x[1] - step)
    ) / (4 * step**2)
    variance_a = -h_bb / (h_aa * h_bb - h_ab**2)
    assert ratings["a"].margin == pytest.approx(
        1.959964 * math.sqrt(variance_a) / NATURAL, rel=0.02
    )
    # The mean anchor moves the scale, not the differences.
    centred = {r.player: r for r in fit(pairings)}
    assert sum(r.elo for r in centred.values()) == pytest.approx(0, abs=1e-6)
    assert centred["a"].elo - centred["b"].elo == pytest.approx(ratings["a"].elo - ratings["b"].elo)
    # LOS of the leader over the next: the normal probability that their difference is > 0.
    ranked = fit(pairings)
    assert [r.player for r in ranked] == sorted("abc", key=lambda p: -centred[p].elo)
    assert 0.5 < ranked[0].los_next < 1 and ranked[-1].los_next is None


def test_players_no_result_connects_stay_finite() -> None:
    ratings = fit([Pairing("a", "b", 4, 4), Pairing("c", "d", 4, 0)])
    assert all(math.isfinite(r.elo) and math.isfinite(r.margin) for r in ratings)


def synthetic_field(players: int, seed: int, parts: int = 1) -> list[Pairing]:
    """Seeded results of players of random strength (sd 200 Elo), each choosing 10 opponents
    in its part of the field (so meeting about 20 others), 5 to 15 games a pairing, 30% of
    them drawn. The first two players won every game they played and the next two lost every
    one (these four never met); the parts (player i in part i % parts) never met. Each pairing
    is given from either side at random, and a pair that chose each other is given twice."""
    rng = random.Random(seed)
    names = [f"p{i:03d}" for i in range(players)]
    strength = [rng.gauss(0, 200) for _ in names]
    pairings = []
    for i, name in enumerate(names):
        rivals = [
            j for j in range(players) if j != i and j % parts == i % parts and not (i < 4 and j < 4)
        ]
        for j in rng.sample(rivals, 10):
            games = rng.randint(5, 15)
            if min(i, j) < 4:
                scored = float(games) if (min(i, j) == i) == (min(i, j) < 2) else 0.0
            else:
                win = 1 / (1 + 10 ** ((strength[j] - strength[i]) / 400))
                scored = 0.0
                for _ in range(games):
                    luck = rng.random()
                    scored += 0.5 if luck < 0.3 else 1.0 if luck < 0.3 + 0.7 * win else 0.0
            pairings.append(
                Pairing(name, names[j], games, scored)
                if rng.random() < 0.5
                else Pairing(names[j], name, games, games - scored)
            )
    return pairings


def alternating_chain(players: int) -> list[Pairing]:
    """Players in a line, each pair of neighbours in turn 10,000 games apart or none (a tie
    of the prior alone, as the arena ties a bot's versions): a field badly conditioned for
    conjugate gradients, which the fit then solves densely."""
    rng = random.Random(players)
    pairings = []
    for i in range(players - 1):
        games = 0 if i % 2 else 10_000
        pairings.append(Pairing(f"p{i:03d}", f"p{i + 1:03d}", games, round(games * rng.random())))
    return pairings


@pytest.mark.parametrize(
    ("pairings", "anchor"),
    [
        (synthetic_field(50, seed=1), None),
        (synthetic_field(100, seed=2), "p010"),
        (synthetic_field(100, seed=3, parts=2), None),
        (synthetic_field(200, seed=4), None),
        (alternating_chain(100), None),
    ],
    ids=["50", "100-anchored", "100-in-two-parts", "200", "chain-100"],
)
def test_the_fit_gives_the_numbers_of_the_fit_before_it(
    pairings: list[Pairing], anchor: str | None
) -> None:
    new, old = fit(pairings, anchor), reference_fit(pairings, anchor)
    assert [r.player for r in new] == [r.player for r in old]
    for mine, theirs in zip(new, old, strict=True):
        assert mine.elo == pytest.approx(theirs.elo, abs=0.1)
        assert mine.low == pytest.approx(theirs.low, abs=0.1)
        assert mine.high == pytest.approx(theirs.high, abs=0.1)
        if theirs.los_next is None:
            assert mine.los_next is None
        else:
            assert mine.los_next == pytest.approx(theirs.los_next, abs=1e-6)


def test_the_synthetic_fields_hold_what_they_say() -> None:
    """The comparison above covers what it claims: players who won or lost everything, and a
    field that no result connects, whose two parts' ratings are hardly comparable."""
    ratings = {r.player: r for r in fit(synthetic_field(100, seed=3, parts=2))}
    assert min(ratings["p000"].elo, ratings["p001"].elo) > max(
        r.elo for name, r in ratings.items() if name not in ("p000", "p001")
    )
    assert max(ratings["p002"].elo, ratings["p003"].elo) < min(
        r.elo for name, r in ratings.items() if name not in ("p002", "p003")
    )
    # Each part's mean is known only from the prior (sd 4000 Elo, over 50 players): the half
    # difference of the two means has sd 4000 sqrt(2 / 50) / 2 = 400, a 95% margin of 784.
    assert all(r.margin > 700 for r in ratings.values())
    connected = fit(synthetic_field(100, seed=2))
    assert all(r.margin < 200 for r in connected)


def constrained_mle(frequency: list[float], score: float) -> list[float]:
    """The distribution over the five pair scores with mean `score` that maximises the
    likelihood of `frequency`, by scipy's SLSQP on the constraints themselves."""
    found = optimize.minimize(
        lambda p: -sum(f * math.log(max(q, 1e-300)) for f, q in zip(frequency, p, strict=True)),
        [0.2] * 5,
        method="SLSQP",
        bounds=[(1e-12, 1)] * 5,
        constraints=[
            {"type": "eq", "fun": lambda p: sum(p) - 1},
            {
                "type": "eq",
                "fun": lambda p: sum(q * a for q, a in zip(p, PAIR_SCORES, strict=True)) - score,
            },
        ],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return list(found.x)


@pytest.mark.parametrize(
    "counts", [(3, 11, 40, 25, 21), (0, 0, 0, 0, 9), (5, 20, 50, 18, 7), (2, 0, 30, 0, 2)]
)
def test_the_llr_is_the_generalized_sprt_of_the_pentanomial(counts: tuple[int, ...]) -> None:
    elo0, elo1 = 0.0, 10.0
    observed = [n if n else 1e-3 for n in counts]
    total = sum(observed)
    frequency = [n / total for n in observed]
    s0, s1 = (1 / (1 + 10 ** (-elo / 400)) for elo in (elo0, elo1))
    p0, p1 = constrained_mle(frequency, s0), constrained_mle(frequency, s1)
    expected = total * sum(
        f * (math.log(b) - math.log(a)) for f, a, b in zip(frequency, p0, p1, strict=True)
    )
    assert llr(counts, elo0, elo1) == pytest.approx(expected, abs=1e-4)


def test_bounds_verdicts_and_pairs() -> None:
    settings = SprtSettings(0, 10, 0.05, 0.05)
    # ln(beta / (1 - alpha)) and ln((1 - beta) / alpha): -2.944 and +2.944.
    assert settings.lower == pytest.approx(-2.9444, abs=1e-4)
    assert settings.upper == pytest.approx(2.9444, abs=1e-4)
    assert SprtSettings(0, 5, 0.05, 0.1).lower == pytest.approx(math.log(0.1 / 0.95))
    # A pair's two results: a win and a loss is worth one, like two draws.
    assert pentanomial([(1, 1), (1, 0), (0.5, 0.5), (0, 0.5), (0, 0)]) == (1, 1, 2, 0, 1)
    assert status(settings, []).verdict is Verdict.RUNNING and status(settings, []).llr == 0
    winning = status(SprtSettings(0, 50, 0.05, 0.05), [(1.0, 1.0)] * 40)
    assert winning.verdict is Verdict.H1 and winning.llr >= winning.settings.upper
    even = status(SprtSettings(0, 50, 0.05, 0.05), [(1.0, 0.0)] * 300 + [(0.5, 0.5)] * 100)
    assert even.verdict is Verdict.H0 and even.llr <= even.settings.lower
    assert math.isfinite(winning.elo.elo) and math.isfinite(winning.elo.margin)
    assert SprtSettings(10, 0, 0.05, 0.05).problem() == "elo0 (10) must be below elo1 (0)"
    assert SprtSettings(0, 5, 0.6, 0.5).problem() == "alpha + beta must be below 1"
    assert (
        SprtSettings(0, math.inf, 0.05, 0.05).problem()
        == "elo1 must be between -2000 and 2000, got inf"
    )
    assert (
        SprtSettings(math.nan, 5, 0.05, 0.05).problem()
        == "elo0 must be between -2000 and 2000, got nan"
    )
    # At the bounds the test is still computed.
    assert math.isfinite(llr((1, 2, 3, 4, 5), -2000, 2000))
