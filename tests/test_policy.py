"""The fault policy as pure functions: who is asked, what a fault costs, the draws' order."""

from __future__ import annotations

import random

import pytest

from referee.errors import FaultKind
from referee.games import Move
from referee.policy import Policy, asked, forfeit_goals, forfeits, resolve, start_outcome

A, B, C, NOOP = Move("(mark 1 1)"), Move("(mark 1 2)"), Move("(mark 1 3)"), Move("noop")


def test_only_roles_with_a_choice_that_are_still_in_are_asked() -> None:
    legal = [(A, B), (NOOP,), (A, C)]
    assert asked(legal, out=()) == [0, 2]
    assert asked(legal, out={2}) == [0]


def test_answers_make_the_joint_move_and_forced_moves_are_played() -> None:
    decided = resolve(Policy.FORFEIT, [(A, B), (NOOP,)], (), {0: B}, random.Random(1))
    assert decided.joint == (B, NOOP)
    assert not decided.drawn and not decided.replacements and not decided.forfeits


def test_under_forfeit_a_fault_forfeits_and_draws_nothing() -> None:
    rng = random.Random(1)
    before = rng.getstate()
    decided = resolve(Policy.FORFEIT, [(A, B), (A, C)], (), {0: FaultKind.TIMEOUT, 1: C}, rng)
    assert decided.forfeits == {0}
    assert rng.getstate() == before
    assert forfeit_goals(2, decided.forfeits) == (0, 100)


def test_under_random_a_fault_is_replaced_and_a_crash_takes_the_role_out() -> None:
    legal = [(A, B, C), (A, B, C)]
    answers = {0: FaultKind.CRASH, 1: FaultKind.ILLEGAL}
    decided = resolve(Policy.RANDOM, legal, (), answers, random.Random(5))
    expected = random.Random(5)
    assert decided.replacements == {0: expected.choice(legal[0]), 1: expected.choice(legal[1])}
    assert decided.joint == (decided.replacements[0], decided.replacements[1])
    assert decided.out == {0}
    assert not decided.forfeits


def test_roles_out_of_the_match_are_drawn_first_then_replacements_in_role_order() -> None:
    legal = [(A, B, C), (A, B, C), (A, B, C)]
    rng = random.Random(9)
    decided = resolve(Policy.RANDOM, legal, {2}, {0: FaultKind.TIMEOUT, 1: A}, rng)
    expected = random.Random(9)
    out_move = expected.choice(legal[2])
    replacement = expected.choice(legal[0])
    assert decided.drawn == {2: out_move}
    assert decided.replacements == {0: replacement}
    assert decided.joint == (replacement, A, out_move)


def test_a_player_that_did_not_get_ready_is_out_and_forfeits_only_under_forfeit() -> None:
    assert start_outcome(Policy.FORFEIT, [1]) == ({1}, {1})
    assert start_outcome(Policy.RANDOM, [1]) == (set(), {1})


@pytest.mark.parametrize("policy", list(Policy))
def test_a_resignation_forfeits_under_every_policy_and_draws_no_move_for_it(
    policy: Policy,
) -> None:
    legal = [(A, B, C), (A, B, C)]
    rng = random.Random(5)
    decided = resolve(policy, legal, (), {0: FaultKind.RESIGNED, 1: B}, rng)
    assert decided.forfeits == {0}
    assert decided.out == {0}
    assert not decided.replacements
    assert rng.getstate() == random.Random(5).getstate()
    assert forfeit_goals(2, decided.forfeits) == (0, 100)


def test_under_random_only_the_resignation_forfeits_a_step_with_another_fault() -> None:
    legal = [(A, B, C), (A, B, C)]
    answers = {0: FaultKind.TIMEOUT, 1: FaultKind.RESIGNED}
    decided = resolve(Policy.RANDOM, legal, (), answers, random.Random(5))
    assert decided.forfeits == {1}
    assert decided.replacements == {0: random.Random(5).choice(legal[0])}
    assert [kind for kind in FaultKind if forfeits(Policy.RANDOM, kind)] == [FaultKind.RESIGNED]
