"""Machines as data: a `MachineSpec` is states + a transition table; `build` makes it live.

A row names a trigger, the states it may fire in, the destination and an optional guard (the
name of a predicate on the model). A trigger fired where no row allows it is a bug: the pure
lookup raises `IllegalTransition`, the `transitions` machine raises `MachineError`.
This module is imported on the startup path, so it avoids `typing` and `dataclasses`.
"""

from __future__ import annotations

from enum import StrEnum

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from transitions import Machine


class IllegalTransition(Exception):
    """A trigger was fired in a state that has no row for it."""


class Row:
    """One line of a transition table."""

    __slots__ = ("dest", "doc", "guard", "sources", "trigger")

    def __init__(
        self,
        trigger: StrEnum,
        sources: StrEnum | Iterable[StrEnum],
        dest: StrEnum,
        *,
        guard: str | None = None,
        doc: str = "",
    ) -> None:
        self.trigger = trigger
        self.sources = (sources,) if isinstance(sources, StrEnum) else tuple(sources)
        self.dest = dest
        self.guard = guard
        self.doc = doc

    def __repr__(self) -> str:
        sources = "|".join(self.sources)
        guard = f" [{self.guard}]" if self.guard else ""
        return f"<Row {sources} --{self.trigger}{guard}--> {self.dest}>"


class MachineSpec:
    """States, initial and final states, the table, and one line per state on what it does."""

    __slots__ = ("_shared", "final", "initial", "name", "rows", "state_docs", "states",
                 "triggers")

    def __init__(
        self,
        name: str,
        states: type[StrEnum],
        triggers: type[StrEnum],
        initial: StrEnum,
        final: Iterable[StrEnum],
        rows: Iterable[Row],
        state_docs: Mapping[StrEnum, str],
    ) -> None:
        self.name = name
        self.states = states
        self.triggers = triggers
        self.initial = initial
        self.final = tuple(final)
        self.rows = tuple(rows)
        self.state_docs = dict(state_docs)
        self._shared: Machine | None = None  # see `fire`
        self._check()

    def _check(self) -> None:
        missing = [s for s in self.states if s not in self.state_docs]
        if missing:
            raise ValueError(f"{self.name}: undocumented states {missing}")
        seen: set[tuple[str, str, str | None]] = set()
        for row in self.rows:
            for source in row.sources:
                key = (row.trigger.value, source.value, row.guard)
                if key in seen:
                    raise ValueError(f"{self.name}: duplicate row {row!r}")
                seen.add(key)

    def rows_for(self, state: StrEnum, trigger: StrEnum) -> list[Row]:
        return [r for r in self.rows if r.trigger == trigger and state in r.sources]

    def next_state(self, state: StrEnum, trigger: StrEnum) -> StrEnum:
        """Pure lookup for unguarded rows; raises `IllegalTransition` when none applies."""
        rows = [r for r in self.rows_for(state, trigger) if r.guard is None]
        if not rows:
            raise IllegalTransition(f"{self.name}: {trigger} is not allowed in state {state}")
        return rows[0].dest

    def fire(self, model: object, trigger: str) -> bool:
        """Fire `trigger` on `model` (its `state` attribute) with the spec's one shared
        machine, which knows no model: what `build` binds to a model per machine (~1 ms a
        machine, a turn being one per prompt) is not needed to drive it. Raises
        `MachineError` where the table has no row, as a built machine does."""
        if self._shared is None:
            self._shared = self.build(None)
        return bool(self._shared.events[trigger].trigger(model))

    def build(self, model: object, initial: StrEnum | None = None) -> Machine:
        """A `transitions` machine driving `model` (its `state` attribute and trigger methods;
        None: models are added later)."""
        from transitions import Machine

        machine = Machine(
            model=model,
            states=[s.value for s in self.states],
            initial=(initial or self.initial).value,
            auto_transitions=False,
            ignore_invalid_triggers=False,
            model_attribute="state",
        )
        for row in self.rows:
            machine.add_transition(
                row.trigger.value,
                [s.value for s in row.sources],
                row.dest.value,
                conditions=[row.guard] if row.guard else None,
            )
        return machine
