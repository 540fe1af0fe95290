"""How the TODO items of a plan are scheduled: the strategies, declared once.

``supervisor.strategy`` in the configuration, ``--strategy`` on the command line, the planner's
prompt and the delegate node all take them from ``STRATEGIES``; the code asks a strategy what it
allows (``follows_dependencies``, ``capacity``), never compares its name. A new strategy is one
entry here.

Kept free of heavy imports: the ``a2a`` command reads the names to build its parser.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_STRATEGY", "STRATEGIES", "Strategy", "strategy_named"]


@dataclass(frozen=True)
class Strategy:
    name: str
    #: What it does, for people (``--help``, ``supervisor/README.md``).
    summary: str
    #: What the planning model is told about how its list will run.
    planner_note: str
    #: An item waits until every item in its ``depends_on`` is done (else dependencies are dropped).
    follows_dependencies: bool
    #: Only one item is in flight at a time (else up to ``supervisor.max_concurrency``).
    one_at_a_time: bool

    def capacity(self, max_concurrency: int) -> int:
        """How many delegations may be in flight at once."""
        return 1 if self.one_at_a_time else max_concurrency


STRATEGIES: dict[str, Strategy] = {
    strategy.name: strategy
    for strategy in (
        Strategy(
            "sequential",
            summary="one item at a time, in list order",
            planner_note="Items run one at a time, in list order.",
            follows_dependencies=True,
            one_at_a_time=True,
        ),
        Strategy(
            "parallel",
            summary="every item at once (up to max_concurrency); depends_on is ignored",
            planner_note="Every item runs at once, so make the items independent: depends_on is ignored.",
            follows_dependencies=False,
            one_at_a_time=False,
        ),
        Strategy(
            "adaptive",
            summary="independent items in parallel; an item starts when all of its depends_on are done",
            planner_note="Independent items run in parallel; an item runs once every item in its depends_on is done.",
            follows_dependencies=True,
            one_at_a_time=False,
        ),
    )
}

DEFAULT_STRATEGY = "adaptive"


def strategy_named(name: str) -> Strategy:
    """The strategy called ``name``; a ``ValueError`` listing the choices for any other name."""
    strategy = STRATEGIES.get(name)
    if strategy is None:
        *others, last = (repr(n) for n in STRATEGIES)
        raise ValueError(f"Input should be {', '.join(others)} or {last}")
    return strategy
