"""Machines as data: a `MachineSpec` is states + a transition table, and `step` runs it.

A row names a trigger, the states it may fire in, the destination and an optional `Guard`.
`step` is the one evaluator of every table, on the startup path and at run time alike: the
first row for (state, trigger) whose guard holds, the guard's predicate passed in by the
caller; where no row allows the trigger, `IllegalTransition` (a bug). The same table built as
a `transitions` machine (`build`) is the reference the tests hold `step` to. This module is
imported on the startup path, so it avoids `typing` and `dataclasses`.
"""

from __future__ import annotations

from enum import StrEnum

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from transitions import Machine

    Guards = Mapping["Guard", Callable[[], bool]]


class IllegalTransition(Exception):
    """A trigger was fired in a state that has no row for it."""


class Guard:
    """A condition a row depends on, named for the diagram; its predicate is the caller's."""

    __slots__ = ("doc", "name")

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.doc = doc

    def __repr__(self) -> str:
        return f"<Guard {self.name}>"


class Row:
    """One line of a transition table."""

    __slots__ = ("dest", "doc", "guard", "sources", "trigger")

    def __init__(
        self,
        trigger: StrEnum,
        sources: StrEnum | Iterable[StrEnum],
        dest: StrEnum,
        *,
        guard: Guard | None = None,
        doc: str = "",
    ) -> None:
        self.trigger = trigger
        self.sources = (sources,) if isinstance(sources, StrEnum) else tuple(sources)
        self.dest = dest
        self.guard = guard
        self.doc = doc

    def __repr__(self) -> str:
        sources = "|".join(self.sources)
        guard = f" [{self.guard.name}]" if self.guard else ""
        return f"<Row {sources} --{self.trigger}{guard}--> {self.dest}>"


class MachineSpec:
    """States, initial and final states, the table, and one line per state on what it does.
    `groups` name sets of states the diagram draws as one (a row from exactly such a set is
    one edge from the group)."""

    __slots__ = (
        "_rows_by_pair",
        "final",
        "groups",
        "initial",
        "name",
        "rows",
        "state_docs",
        "states",
        "triggers",
    )

    def __init__(
        self,
        name: str,
        states: type[StrEnum],
        triggers: type[StrEnum],
        initial: StrEnum,
        final: Iterable[StrEnum],
        rows: Iterable[Row],
        state_docs: Mapping[StrEnum, str],
        groups: Mapping[str, tuple[StrEnum, ...]] | None = None,
    ) -> None:
        self.name = name
        self.states = states
        self.triggers = triggers
        self.initial = initial
        self.final = tuple(final)
        self.rows = tuple(rows)
        self.state_docs = dict(state_docs)
        self.groups = dict(groups or {})
        self._rows_by_pair: dict[tuple[str, str], tuple[Row, ...]] = {}
        for row in self.rows:
            for source in row.sources:
                key = (source.value, row.trigger.value)
                self._rows_by_pair[key] = (*self._rows_by_pair.get(key, ()), row)
        self._check()

    def _check(self) -> None:
        missing = [s for s in self.states if s not in self.state_docs]
        if missing:
            raise ValueError(f"{self.name}: undocumented states {missing}")
        for (source, trigger), rows in self._rows_by_pair.items():
            guards = [row.guard for row in rows]
            if len(set(guards)) != len(guards) or None in guards[:-1]:
                raise ValueError(
                    f"{self.name}: rows for {trigger} in {source} overlap: "
                    f"{rows!r} (one per guard, the unguarded one last)"
                )
        for group, members in self.groups.items():
            if not set(members) <= set(self.states) or set(members) & set(self.final):
                raise ValueError(f"{self.name}: group {group} must hold working states only")

    def rows_for(self, state: str, trigger: str) -> tuple[Row, ...]:
        """The rows for `trigger` in `state`, in table order."""
        return self._rows_by_pair.get((state, trigger), ())

    def guards(self) -> tuple[Guard, ...]:
        """Every guard of the table, in table order."""
        found = [row.guard for row in self.rows if row.guard is not None]
        return tuple(dict.fromkeys(found))

    def step(self, state: str, trigger: StrEnum, guards: Guards | None = None) -> StrEnum:
        """The state `trigger` leads to from `state`: the first row for the pair whose guard
        holds (`guards` maps each guard to its predicate; a guarded row needs one). Raises
        `IllegalTransition` when no row applies."""
        for row in self._rows_by_pair.get((state, trigger.value), ()):
            if row.guard is None:
                return row.dest
            if guards is None or row.guard not in guards:
                raise ValueError(f"{self.name}: no predicate for the guard {row.guard.name}")
            if guards[row.guard]():
                return row.dest
        raise IllegalTransition(f"{self.name}: {trigger} is not allowed in state {state}")

    def build(
        self, model: object, guards: Guards | None = None, initial: StrEnum | None = None
    ) -> Machine:
        """The same table as a `transitions` machine driving `model` (its `state` attribute
        and trigger methods), each guard's predicate from `guards`: the reference `step` is
        held to in the tests, and a way to inspect a table with that library's tools."""
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
            condition = None if row.guard is None else (guards or {})[row.guard]
            machine.add_transition(
                row.trigger.value,
                [s.value for s in row.sources],
                row.dest.value,
                conditions=[condition] if condition else None,
            )
        return machine
