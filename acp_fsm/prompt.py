"""ACP prompt content → the model's user message (ACP: Content, prompt capabilities).

Text and resource links are always accepted; embedded resources and images because the agent
advertises `embeddedContext` and `image`; audio is not advertised and is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from acp_fsm.errors import BadRequest
from acp_fsm.front_matter import shortened
from acp_fsm.providers.types import ImagePart, TextPart, UserPart

if TYPE_CHECKING:
    from acp_fsm.schemas import acp_types as acp

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
TITLE_CHARS = 80  # of a session's title (what editors show in a list)


def to_parts(blocks: list[acp.ContentBlock]) -> tuple[UserPart, ...]:
    """The model-facing parts of a prompt; `BadRequest` names an unsupported block."""
    parts: list[UserPart] = []
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            parts.append(TextPart(block["text"]))
        elif block["type"] == "resource_link":
            name = block.get("title") or block.get("name") or block["uri"]
            parts.append(TextPart(f"[Referenced resource: {name}]({block['uri']})"))
        elif block["type"] == "resource":
            parts.append(_embedded(block["resource"]))
        elif block["type"] == "image":
            parts.append(_image(index, block.get("mimeType", ""), block.get("data")))
        else:
            raise BadRequest(
                f"prompt[{index}]", f"{block['type']} content is not supported by this agent"
            )
    return tuple(parts)


def _embedded(resource: Mapping[str, Any]) -> UserPart:
    uri = resource.get("uri", "")
    if "text" in resource:
        return TextPart(f'<context uri="{uri}">\n{resource["text"]}\n</context>')
    mime = resource.get("mimeType") or ""
    if mime in IMAGE_TYPES and resource.get("blob"):
        return ImagePart(resource["blob"], mime)
    return TextPart(
        f'<context uri="{uri}">(binary content of type {mime or "unknown"} omitted)</context>'
    )


def _image(index: int, mime: str, data: object) -> ImagePart:
    if mime not in IMAGE_TYPES or not isinstance(data, str) or not data:
        raise BadRequest(
            f"prompt[{index}]",
            f"an image needs base64 data of one of {sorted(IMAGE_TYPES)} "
            f"(got {mime or 'no mimeType'})",
        )
    return ImagePart(data, mime)


def title_of(
    blocks: list[acp.ContentBlock], limit: int = TITLE_CHARS, clean: Callable[[str], str] = str
) -> str | None:
    """A session title from the first prompt as the user typed it (a command as typed, not
    what it expands to): the first line of its text, `clean`ed (secrets scrubbed: a cut could
    leave a piece of one), its spaces collapsed, cut after a whole word. It stays the title
    unless a model makes another (`acp_fsm.titles`; never on a compatible server, unless
    ACP_FSM_TITLE_MODEL asks for it)."""
    for block in blocks:
        if block["type"] == "text":
            for line in clean(block["text"]).splitlines():
                if text := " ".join(line.split()):
                    return shortened(text, limit, at_word=True)
    return None
