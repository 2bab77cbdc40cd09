"""Breaks nothing: it offers the model only `run_command`, as agents whose model edits files
through a shell do, so the delegation checks' file is written by a shell command."""

from typing import ClassVar

from tests.conformance.broken.base import TOOLS, Agent, Message


class ShellOnly(Agent):
    tools: ClassVar[list[Message]] = [
        tool for tool in TOOLS if tool["function"]["name"] == "run_command"
    ]


if __name__ == "__main__":
    ShellOnly().main()
