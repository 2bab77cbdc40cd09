"""Breaks `transport.batch`: a batch crashes it (it takes every line for one object)."""

from typing import Any

from tests.conformance.broken.base import Agent


class BatchCrash(Agent):
    def batch(self, items: list[Any]) -> Any:
        raise TypeError("a batch: list indices must be integers or slices, not str")


if __name__ == "__main__":
    BatchCrash().main()
