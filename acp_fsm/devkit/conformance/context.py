"""What a check runs with: the agent under test (`Target`: the command, its environment, the
limits of every wait) and a `Context`, which starts the check's `Probe`s, ends them, and
renders the evidence: the transcript's tail, the agents' stderr."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from acp_fsm.devkit.conformance.output import MESSAGE_LIMIT, MIB, Line
from acp_fsm.devkit.conformance.probe import WAIT_S, Probe
from acp_fsm.devkit.conformance.reading import LINE_CLIP, clip
from acp_fsm.devkit.conformance.verdicts import Violation
from acp_fsm.devkit.editor import Editor, NoAnswer
from acp_fsm.devkit.editor.v1_view import V1View
from acp_fsm.devkit.schema_check.official import OfficialSchema

if TYPE_CHECKING:
    from acp_fsm.devkit.provider import ScriptedProvider

EVIDENCE_LINES: Final = 20
EVIDENCE_BYTES: Final = 2048
STDERR_TAIL: Final = 1000


@dataclass(frozen=True)
class Target:
    """The agent under test and the limits of every wait."""

    command: tuple[str, ...]
    env: dict[str, str]
    project: Path  # the cwd of the sessions the checks open
    wait_s: float = WAIT_S  # one answer, one exit
    settle_s: float = 0.3  # how long after a response to watch for stray updates
    official: OfficialSchema | None = None
    auth_method: str | None = None  # `--auth`: the authMethods id to log in with
    model: ScriptedProvider | None = None  # the model server the agent is pointed at


@dataclass
class Context:
    """What one check runs with: its target, and the agents it started."""

    target: Target
    name: str = "check"  # the check's id: its sessions' cwd is a directory of that name
    probes: list[Probe] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)  # measurements for the report

    async def start(
        self,
        editor: Editor | None = None,
        *,
        unset: Iterable[str] = (),
        view: V1View | None = None,
    ) -> Probe:
        """A fresh agent process, its requests answered by `editor` (by default, one that
        answers a permission request with an error and keeps what is written in memory),
        the variables `unset` left out of its environment; spoken to in v2 and read in v1's
        words through `view` when given (`conformance.v2`)."""
        gone = set(unset)
        env = {k: v for k, v in self.target.env.items() if k not in gone}
        try:
            probe = await Probe.spawn(
                env, command=self.target.command, editor=editor or Editor(), kept=True, view=view
            )
        except OSError as exc:
            raise Violation(
                f"could not start {' '.join(self.target.command)}: {exc.strerror or exc}"
            ) from None
        probe.wait_s, probe.settle_s = self.target.wait_s, self.target.settle_s
        probe.auth_method = self.target.auth_method
        probe.model = self.target.model
        cwd = self.target.project / self.name
        cwd.mkdir(parents=True, exist_ok=True)
        probe.session_cwd = str(cwd)
        self.probes.append(probe)
        return probe

    async def restart(self, probe: Probe) -> Probe:
        """End `probe` as an editor does (stdin closed, the exit awaited; killed, as editors
        do, when it has not exited in time: `robustness.stdin_eof` holds that rule), then a
        fresh agent, initialized."""
        try:
            await probe.close(self.target.wait_s)
        except NoAnswer as exc:
            self.data["killed"] = f"{exc}; killed before the next agent started"
            await probe.kill()
        fresh = await self.start()
        await fresh.initialize()
        return fresh

    async def close(self) -> None:
        for probe in self.probes:
            await probe.kill()

    @property
    def agent_info(self) -> Any:
        return next((p.initialized.get("agentInfo") for p in self.probes if p.initialized), None)

    def evidence(self) -> list[str]:
        """The tail of the transcripts: at most `EVIDENCE_LINES` lines and about
        `EVIDENCE_BYTES` bytes, each line clipped."""
        lines: list[str] = []
        for number, probe in enumerate(self.probes, 1):
            prefix = f"[agent {number}] " if len(self.probes) > 1 else ""
            lines += [f"{prefix}{shown(line)}" for line in probe.output.recent]
        tail = lines[-EVIDENCE_LINES:]
        while len(tail) > 1 and sum(len(line) + 1 for line in tail) > EVIDENCE_BYTES:
            tail.pop(0)
        return tail

    def stderr(self) -> str:
        """The end of the agents' stderr, after the size of the whole when that was more."""
        tail = "".join(probe.stderr_tail(STDERR_TAIL) for probe in self.probes)[-STDERR_TAIL:]
        written = sum(probe.output.stderr.bytes for probe in self.probes)
        if written <= len(tail.encode()):
            return tail
        lines = sum(probe.output.stderr.lines for probe in self.probes)
        return (
            f"[{written:,} bytes in {lines:,} newline(s); the last {len(tail):,} characters] {tail}"
        )


def shown(line: Line) -> str:
    """A kept line as evidence: its arrow, its text clipped, and what was not read of it."""
    text = line.head.decode("utf-8", "replace")
    if line.overlong:
        return (
            f"{line.arrow} {text[:LINE_CLIP]}… (a line of {line.size:,} bytes or more: longer "
            f"than the {MESSAGE_LIMIT // MIB} MiB the tool reads as one message, not read)"
        )
    if line.size > len(line.head):
        return f"{line.arrow} {text[:LINE_CLIP]}… ({line.size:,} bytes)"
    return f"{line.arrow} {clip(text)}"
