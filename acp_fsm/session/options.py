"""What the user steers in one session (the model, the mode, the thought level: ACP's config
options, `acp_fsm.config_options`) and what its editor was last told of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from acp_fsm import config_options, limits
from acp_fsm.config_options import Settings
from acp_fsm.errors import BadRequest
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.session.journal import Journal

if TYPE_CHECKING:
    from acp_fsm.schemas import acp_types as acp

log = structlog.get_logger("session")


class Options:
    """The options of one session: `settings` as chosen, and `provider`, the configuration as
    last read (session/new, load, resume, each prompt; None when it is not usable), whose
    models the model option offers."""

    def __init__(
        self,
        journal: Journal,
        send_update: Callable[[acp.SessionUpdate], None],
        chosen: Settings | None = None,
    ) -> None:
        self._journal = journal
        self._send_update = send_update
        self.settings = chosen or Settings()
        self.provider: ProviderConfig | None = None
        self._told: list[acp.SessionConfigOption] | None = None  # configOptions last sent
        self._moot: set[str] = set()  # models chosen on a wire the editor left (`forget_model`)

    def __repr__(self) -> str:
        return f"<Options {self.settings!r}>"

    def model(self, config: ProviderConfig) -> str:
        """The model the next model call uses: the one chosen, else the default."""
        return config_options.model_of(self.settings, config)

    def config_options(self) -> list[acp.SessionConfigOption]:
        """The session's ACP `configOptions` now, remembered as what the editor was told."""
        self._told = config_options.for_session(self.settings, self.provider)
        return self._told

    def setup_result(self) -> acp.LoadSessionResponse:
        """What `session/new`, `load` and `resume` answer besides the id, remembered as what
        the editor was told."""
        result = config_options.setup_result(self.settings, self.provider)
        self.told(result)
        return result

    def told(self, result: acp.LoadSessionResponse) -> None:
        """The editor was told `result` (a setup answer; the startup path's, say)."""
        self._told = result.get("configOptions")

    def announce(self) -> None:
        """Send `config_option_update` if the options changed since the editor was told
        (the provider's model list arrived)."""
        told = self._told
        if told is None:
            return
        current = self.config_options()
        if current != told:
            self._send_update({"sessionUpdate": "config_option_update", "configOptions": current})

    async def set_option(self, config_id: str, value: object) -> list[acp.SessionConfigOption]:
        """`session/set_config_option`: stored, then in effect from the next model call."""
        current = config_options.check_choice(self.config_options(), config_id, value)
        assert isinstance(value, str)  # a value of the option
        if value != current:
            await self._choose(config_id, value)
            if config_id == config_options.MODE:  # clients of the older API follow the mode too
                self._send_update({"sessionUpdate": "current_mode_update", "currentModeId": value})
        return self.config_options()

    async def set_model(self, model_id: str) -> None:
        """`session/set_model` (from earlier drafts, still called by older clients): the
        `model` option's checks and storage, announced with `config_option_update`."""
        before = self.settings.model
        options = await self.set_option(config_options.MODEL, model_id)
        if self.settings.model != before:
            self._send_update({"sessionUpdate": "config_option_update", "configOptions": options})

    async def set_mode(self, mode_id: str) -> None:
        """`session/set_mode`, the older way to choose the mode."""
        if mode_id not in config_options.MODES:
            raise BadRequest(
                "modeId",
                f"unknown mode {limits.echo(mode_id)}; expected one of "
                f"{', '.join(config_options.MODES)}",
            )
        if mode_id != self.settings.mode:
            await self._choose(config_options.MODE, mode_id)
            self._send_update(
                {"sessionUpdate": "config_option_update", "configOptions": self.config_options()}
            )

    async def _choose(self, config_id: str, value: str) -> None:
        """Store one choice, then apply it to the settings as they are then (two choices
        made at once each keep theirs). Not under the turn lease: it does not count as
        catching up with the store (`synced=False`), so another process's turn written
        meanwhile is still read at the next prompt."""
        await self._journal.write(
            "settings", config_options.entry_body(config_id, value), wait=True, synced=False
        )
        self.settings = self.settings.chosen(config_id, value)
        self._moot.discard(value)  # chosen again: the user's
        log.info(
            "settings_changed", session_id=self._journal.session_id, option=config_id, value=value
        )

    def forget_model(self) -> None:
        """The model chosen is not the provider's any more (the editor set an endpoint of
        another wire): the default from now on, in this process (what is stored stays, for
        the environment's provider), until the user chooses it again."""
        if self.settings.model is not None:
            self._moot.add(self.settings.model)
        self.settings = self.settings._replace(model=None)

    def adopt(self, chosen: Settings) -> None:
        """Settings read from the store (another process chose): announced if they differ."""
        if chosen.model in self._moot:  # forgotten here (`forget_model`)
            chosen = chosen._replace(model=None)
        if chosen == self.settings:
            return
        mode_changed = chosen.mode != self.settings.mode
        self.settings = chosen
        if self._told is not None:
            self._send_update(
                {"sessionUpdate": "config_option_update", "configOptions": self.config_options()}
            )
        if mode_changed:
            self._send_update(
                {"sessionUpdate": "current_mode_update", "currentModeId": chosen.mode}
            )
