"""Games from GDL rulesheets: read, checked, grounded by clingo, compiled to Python.

The package imports none of its modules itself: a command that only names a game's limits
(the command line's options) does not load the reasoners.

The modules, each with its one job:
  syntax.py        KIF text to GDL sentences, each with its line
  check.py         the checks a rulesheet must pass before it is grounded
  decompose.py     rules split so that grounding does not multiply independent variables
  magic.py         rules rewritten so that a state's grounding derives only what is asked
  asp.py           GDL as an answer-set program for clingo, and clingo's symbols back
  ground.py        the whole game grounded and compiled in a child process with limits
  ground_child.py  that child: parse, check, ground and compile a rulesheet
  compile.py       a ground program compiled to straight-line Python
  reasoner.py      what a GDL game asks of its rules, whichever reasoner answers
  per_state.py     the per-state reasoner: each state grounded on its own
  limits.py        what computing one state may take: address space and time
  remote.py        the per-state reasoner in a child process, under those limits
  remote_child.py  that child: the per-state reasoner, one question a line
  orphan.py        what a reasoning child does when its referee is gone
  game.py          any GDL game behind the `Game` interface, with the faults of its rules
  render.py        a GDL state as text: grids for board-like relations, then the facts
"""
