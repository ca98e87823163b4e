"""GDL rulesheets made for the tests of the rules' limits."""

from __future__ import annotations


def dense(size: int) -> str:
    """A small rulesheet whose whole ground program is big: a `next` rule over every pair of
    `size` values, size * size ground rules, which compile in seconds."""
    values = " ".join(f"(dom d{i})" for i in range(size))
    return f"""
        (role a) (role b) (init (step 0)) (init (c d0)) {values}
        (succ 0 1) (succ 1 2) (succ 2 3)
        (<= (edge ?x ?y) (dom ?x) (dom ?y))
        (<= (legal ?r (flip ?x)) (role ?r) (dom ?x))
        (<= (next (c ?x)) (true (c ?y)) (edge ?x ?y) (not (does a (flip ?y))))
        (<= (next (step ?m)) (true (step ?n)) (succ ?n ?m))
        (<= terminal (true (step 3)))
        (<= (goal ?r 50) (role ?r))
    """
