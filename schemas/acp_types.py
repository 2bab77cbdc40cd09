"""ACP's payloads as TypedDicts, generated from `schemas/acp.json` by
`python -m acp_fsm.devkit.typegen`; do not edit. Imported for the type checker only."""

from __future__ import annotations

from typing import Any, Literal, Required, TypeAlias, TypedDict


class Error(TypedDict, total=False):
    """JSON-RPC error object."""
    code: Required[ErrorCode]
    message: Required[str]
    data: Any


class Annotations(TypedDict, total=False):
    """Optional hints about how content is used or shown."""
    audience: list[Role] | None
    lastModified: str | None
    priority: float | None
    _meta: dict[str, Any] | None


class TextContent(TypedDict, total=False):
    """Plain text."""
    annotations: Annotations | None
    text: Required[str]
    _meta: dict[str, Any] | None


class ImageContent(TypedDict, total=False):
    """Base64-encoded image (needs promptCapabilities.image in prompts)."""
    annotations: Annotations | None
    data: Required[str]
    mimeType: Required[str]
    uri: str | None
    _meta: dict[str, Any] | None


class AudioContent(TypedDict, total=False):
    """Base64-encoded audio (needs promptCapabilities.audio in prompts)."""
    annotations: Annotations | None
    data: Required[str]
    mimeType: Required[str]
    _meta: dict[str, Any] | None


class ResourceLink(TypedDict, total=False):
    """Reference to a resource the agent may fetch itself."""
    annotations: Annotations | None
    description: str | None
    mimeType: str | None
    name: Required[str]
    size: int | None
    title: str | None
    uri: Required[str]
    _meta: dict[str, Any] | None


class TextResourceContents(TypedDict, total=False):
    """Text body of an embedded resource."""
    mimeType: str | None
    text: Required[str]
    uri: Required[str]
    _meta: dict[str, Any] | None


class BlobResourceContents(TypedDict, total=False):
    """Binary body of an embedded resource."""
    blob: Required[str]
    mimeType: str | None
    uri: Required[str]
    _meta: dict[str, Any] | None


class EmbeddedResource(TypedDict, total=False):
    """Resource content included inline (needs promptCapabilities.embeddedContext in
    prompts)."""
    annotations: Annotations | None
    resource: Required[EmbeddedResourceResource]
    _meta: dict[str, Any] | None


class ContentBlockText(TextContent, total=False):
    type: Required[Literal["text"]]


class ContentBlockImage(ImageContent, total=False):
    type: Required[Literal["image"]]


class ContentBlockAudio(AudioContent, total=False):
    type: Required[Literal["audio"]]


class ContentBlockResourceLink(ResourceLink, total=False):
    type: Required[Literal["resource_link"]]


class ContentBlockResource(EmbeddedResource, total=False):
    type: Required[Literal["resource"]]


class Content(TypedDict, total=False):
    """Tool output that is ordinary content."""
    content: Required[ContentBlock]
    _meta: dict[str, Any] | None


class Diff(TypedDict, total=False):
    """A file modification shown as a diff."""
    path: Required[str]
    oldText: str | None
    newText: Required[str]
    _meta: dict[str, Any] | None


class Terminal(TypedDict, total=False):
    """Embeds a live client terminal in the tool output."""
    terminalId: Required[TerminalId]
    _meta: dict[str, Any] | None


class ToolCallContentContent(Content, total=False):
    type: Required[Literal["content"]]


class ToolCallContentDiff(Diff, total=False):
    type: Required[Literal["diff"]]


class ToolCallContentTerminal(Terminal, total=False):
    type: Required[Literal["terminal"]]


class SessionReference(TypedDict, total=False):
    """Tool-call content that shows a session the call works on (a subagent's child session,
    announced before)."""
    sessionId: Required[SessionId]
    _meta: dict[str, Any] | None


class ToolCallContentSession(SessionReference, total=False):
    type: Required[Literal["session"]]


class ToolCallLocation(TypedDict, total=False):
    """A file location a tool call touches (for follow-along)."""
    path: Required[str]
    line: int | None
    _meta: dict[str, Any] | None


class ToolCall(TypedDict, total=False):
    """A new tool call reported to the client."""
    toolCallId: Required[ToolCallId]
    title: Required[str]
    name: str | None
    kind: ToolKind
    status: ToolCallStatus
    content: list[ToolCallContent]
    locations: list[ToolCallLocation]
    rawInput: Any
    rawOutput: Any
    _meta: dict[str, Any] | None


class ToolCallUpdate(TypedDict, total=False):
    """Changes to an existing tool call; only fields present are updated."""
    toolCallId: Required[ToolCallId]
    kind: ToolKind | None
    status: ToolCallStatus | None
    title: str | None
    name: str | None
    content: list[ToolCallContent] | None
    locations: list[ToolCallLocation] | None
    rawInput: Any
    rawOutput: Any
    _meta: dict[str, Any] | None


class PermissionOption(TypedDict, total=False):
    """One choice offered to the user."""
    optionId: Required[PermissionOptionId]
    name: Required[str]
    kind: Required[PermissionOptionKind]
    _meta: dict[str, Any] | None


class RequestPermissionRequest(TypedDict, total=False):
    """Params of session/request_permission: ask the user to authorise a tool call."""
    sessionId: Required[SessionId]
    toolCall: Required[ToolCallUpdate]
    options: Required[list[PermissionOption]]
    _meta: dict[str, Any] | None


class SelectedPermissionOutcome(TypedDict, total=False):
    """The user picked an option."""
    optionId: Required[PermissionOptionId]
    _meta: dict[str, Any] | None


class RequestPermissionOutcomeCancelled(TypedDict, total=False):
    """The prompt turn was cancelled before the user chose."""
    outcome: Required[Literal["cancelled"]]


class RequestPermissionOutcomeSelected(SelectedPermissionOutcome, total=False):
    """The user chose `optionId`."""
    outcome: Required[Literal["selected"]]


class RequestPermissionResponse(TypedDict, total=False):
    """Result of session/request_permission."""
    outcome: Required[RequestPermissionOutcome]
    _meta: dict[str, Any] | None


class Implementation(TypedDict, total=False):
    """Name and version of a client or agent program."""
    name: Required[str]
    title: str | None
    version: Required[str]
    _meta: dict[str, Any] | None


class FileSystemCapabilities(TypedDict, total=False):
    """Client file-system methods the agent may call."""
    readTextFile: bool
    writeTextFile: bool
    _meta: dict[str, Any] | None


class AuthCapabilities(TypedDict, total=False):
    """Authentication features the client supports."""
    terminal: bool
    _meta: dict[str, Any] | None


class BooleanConfigOptionCapabilities(TypedDict, total=False):
    """Present when the client can show boolean config options."""
    _meta: dict[str, Any] | None


class SessionConfigOptionsCapabilities(TypedDict, total=False):
    """Config option kinds the client understands beyond `select`."""
    boolean: BooleanConfigOptionCapabilities | None
    _meta: dict[str, Any] | None


class ClientSessionCapabilities(TypedDict, total=False):
    """Session-level features of the client."""
    compaction: CompactionCapabilities | None
    configOptions: SessionConfigOptionsCapabilities | None
    notices: NoticeCapabilities | None
    _meta: dict[str, Any] | None


class ElicitationFormCapabilities(TypedDict, total=False):
    """Present when the client supports form elicitation."""
    _meta: dict[str, Any] | None


class ElicitationUrlCapabilities(TypedDict, total=False):
    """Present when the client supports URL elicitation."""
    _meta: dict[str, Any] | None


class ElicitationCapabilities(TypedDict, total=False):
    """Elicitation modes the client supports."""
    form: ElicitationFormCapabilities | None
    url: ElicitationUrlCapabilities | None
    _meta: dict[str, Any] | None


class EnumOption(TypedDict, total=False):
    """A choice of a form field: the value sent back and the words shown."""
    const: Required[str]
    title: Required[str]
    _meta: dict[str, Any] | None


class StringPropertySchema(TypedDict, total=False):
    """A text field of a form (a choice when `enum` or `oneOf` lists the values)."""
    title: str | None
    minLength: int | None
    maxLength: int | None
    pattern: str | None
    format: Literal["email", "uri", "date", "date-time"] | None
    default: str | None
    enum: list[str] | None
    oneOf: list[EnumOption] | None
    _meta: dict[str, Any] | None


class NumberPropertySchema(TypedDict, total=False):
    """A number field of a form."""
    title: str | None
    minimum: float | None
    maximum: float | None
    default: float | None
    _meta: dict[str, Any] | None


class IntegerPropertySchema(TypedDict, total=False):
    """A whole-number field of a form."""
    title: str | None
    minimum: int | None
    maximum: int | None
    default: int | None
    _meta: dict[str, Any] | None


class BooleanPropertySchema(TypedDict, total=False):
    """A yes/no field of a form."""
    title: str | None
    default: bool | None
    _meta: dict[str, Any] | None


class MultiSelectItemsString(TypedDict, total=False):
    type: Required[Literal["string"]]
    enum: Required[list[str]]
    _meta: dict[str, Any] | None


class MultiSelectItemsVariant1(TypedDict, total=False):
    anyOf: Required[list[EnumOption]]
    _meta: dict[str, Any] | None


class MultiSelectPropertySchema(TypedDict, total=False):
    """A multiple-choice field of a form."""
    title: str | None
    minItems: int | None
    maxItems: int | None
    items: Required[MultiSelectItems]
    default: list[str] | None
    _meta: dict[str, Any] | None


class ElicitationPropertySchemaString(StringPropertySchema, total=False):
    type: Required[Literal["string"]]


class ElicitationPropertySchemaNumber(NumberPropertySchema, total=False):
    type: Required[Literal["number"]]


class ElicitationPropertySchemaInteger(IntegerPropertySchema, total=False):
    type: Required[Literal["integer"]]


class ElicitationPropertySchemaBoolean(BooleanPropertySchema, total=False):
    type: Required[Literal["boolean"]]


class ElicitationPropertySchemaArray(MultiSelectPropertySchema, total=False):
    type: Required[Literal["array"]]


class ElicitationSchema(TypedDict, total=False):
    """The fields of a form: a flat object schema."""
    type: Required[Literal["object"]]
    title: str | None
    properties: Required[dict[str, Any]]
    required: list[str] | None
    _meta: dict[str, Any] | None


class CreateElicitationRequest(TypedDict, total=False):
    """Params of elicitation/create: ask the user to fill in a form (the only mode acp-fsm
    sends)."""
    sessionId: Required[SessionId]
    toolCallId: ToolCallId | None
    message: Required[str]
    mode: Required[Literal["form"]]
    requestedSchema: Required[ElicitationSchema]
    _meta: dict[str, Any] | None


class CreateElicitationResponse(TypedDict, total=False):
    """Result of elicitation/create, tagged by `action`: accept (with the form's content),
    decline or cancel; another action is read as a cancel."""
    action: Required[str]
    _meta: dict[str, Any] | None


class ClientCapabilities(TypedDict, total=False):
    """What the client offers to the agent."""
    fs: FileSystemCapabilities
    terminal: bool
    session: ClientSessionCapabilities | None
    auth: AuthCapabilities
    elicitation: ElicitationCapabilities | None
    subagents: SubagentCapabilities | None
    _meta: dict[str, Any] | None


class InitializeRequest(TypedDict, total=False):
    """Params of initialize: version and capability negotiation."""
    protocolVersion: Required[RequestedProtocolVersion]
    clientCapabilities: ClientCapabilities
    clientInfo: Implementation | None
    _meta: dict[str, Any] | None


class PromptCapabilities(TypedDict, total=False):
    """Content types accepted in session/prompt beyond text and resource_link."""
    image: bool
    audio: bool
    embeddedContext: bool
    _meta: dict[str, Any] | None


class McpCapabilities(TypedDict, total=False):
    """MCP transports the agent can connect to besides stdio."""
    http: bool
    sse: bool
    _meta: dict[str, Any] | None


class SessionListCapabilities(TypedDict, total=False):
    """Present when the agent supports session/list."""
    _meta: dict[str, Any] | None


class SessionDeleteCapabilities(TypedDict, total=False):
    """Present when the agent supports session/delete."""
    _meta: dict[str, Any] | None


class SessionResumeCapabilities(TypedDict, total=False):
    """Present when the agent supports session/resume."""
    _meta: dict[str, Any] | None


class SessionCloseCapabilities(TypedDict, total=False):
    """Present when the agent supports session/close."""
    _meta: dict[str, Any] | None


class SessionForkCapabilities(TypedDict, total=False):
    """Present when the agent supports session/fork."""
    _meta: dict[str, Any] | None


class LogoutCapabilities(TypedDict, total=False):
    """Present when the agent supports logout."""
    _meta: dict[str, Any] | None


class SessionAdditionalDirectoriesCapabilities(TypedDict, total=False):
    """Present when the agent accepts additionalDirectories on session setup."""
    _meta: dict[str, Any] | None


class SessionCapabilities(TypedDict, total=False):
    """Optional session methods; an object (even empty) means supported."""
    list: SessionListCapabilities | None
    delete: SessionDeleteCapabilities | None
    additionalDirectories: SessionAdditionalDirectoriesCapabilities | None
    resume: SessionResumeCapabilities | None
    close: SessionCloseCapabilities | None
    fork: SessionForkCapabilities | None
    systemPrompt: SessionSystemPromptCapabilities | None
    title: SessionTitleCapabilities | None
    _meta: dict[str, Any] | None


class SessionSystemPromptCapabilities(TypedDict, total=False):
    """Present when the agent takes systemPrompt on session setup requests (append mode;
    others under mode)."""
    mode: SessionSystemPromptModeCapabilities | None
    _meta: dict[str, Any] | None


class SessionSystemPromptModeCapabilities(TypedDict, total=False):
    """System prompt modes supported besides append."""
    override: SessionSystemPromptOverrideCapabilities | None
    _meta: dict[str, Any] | None


class SessionSystemPromptOverrideCapabilities(TypedDict, total=False):
    """Present when the client's system prompt may replace the agent's built-in
    instructions."""
    _meta: dict[str, Any] | None


class SystemPrompt(TypedDict, total=False):
    """Client-provided system-level instructions for a session."""
    mode: Required[str]
    content: Required[list[ContentBlock]]
    _meta: dict[str, Any] | None


class AgentAuthCapabilities(TypedDict, total=False):
    """Authentication features of the agent."""
    logout: LogoutCapabilities | None
    _meta: dict[str, Any] | None


class AgentCapabilities(TypedDict, total=False):
    """What the agent supports."""
    loadSession: bool
    promptCapabilities: PromptCapabilities
    mcpCapabilities: McpCapabilities
    sessionCapabilities: SessionCapabilities
    providers: ProvidersCapabilities | None
    auth: AgentAuthCapabilities
    _meta: dict[str, Any] | None


class AuthMethodAgent(TypedDict, total=False):
    """Authentication handled by the agent itself (e.g. an API key in its environment)."""
    id: Required[AuthMethodId]
    name: Required[str]
    description: str | None
    _meta: dict[str, Any] | None


class AuthMethodTerminal(TypedDict, total=False):
    """Authentication run by the client as an interactive terminal program."""
    id: Required[AuthMethodId]
    name: Required[str]
    description: str | None
    args: list[str]
    env: dict[str, Any]
    _meta: dict[str, Any] | None


class AuthMethodTerminalVariant(AuthMethodTerminal, total=False):
    type: Required[Literal["terminal"]]


class InitializeResponse(TypedDict, total=False):
    """Result of initialize."""
    protocolVersion: Required[ProtocolVersion]
    agentCapabilities: AgentCapabilities
    authMethods: list[AuthMethod]
    agentInfo: Implementation | None
    _meta: dict[str, Any] | None


class AuthenticateRequest(TypedDict, total=False):
    """Params of authenticate."""
    methodId: Required[AuthMethodId]
    _meta: dict[str, Any] | None


class AuthenticateResponse(TypedDict, total=False):
    """Result of authenticate."""
    _meta: dict[str, Any] | None


class LogoutRequest(TypedDict, total=False):
    """Params of logout."""
    _meta: dict[str, Any] | None


class LogoutResponse(TypedDict, total=False):
    """Result of logout."""
    _meta: dict[str, Any] | None


class EnvVariable(TypedDict, total=False):
    """An environment variable."""
    name: Required[str]
    value: Required[str]
    _meta: dict[str, Any] | None


class HttpHeader(TypedDict, total=False):
    """An HTTP header."""
    name: Required[str]
    value: Required[str]
    _meta: dict[str, Any] | None


class McpServerHttp(TypedDict, total=False):
    """MCP server reached over streamable HTTP."""
    name: Required[str]
    url: Required[str]
    headers: Required[list[HttpHeader]]
    _meta: dict[str, Any] | None


class McpServerSse(TypedDict, total=False):
    """MCP server reached over SSE."""
    name: Required[str]
    url: Required[str]
    headers: Required[list[HttpHeader]]
    _meta: dict[str, Any] | None


class McpServerStdio(TypedDict, total=False):
    """MCP server started as a subprocess speaking stdio."""
    name: Required[str]
    command: Required[str]
    args: Required[list[str]]
    env: Required[list[EnvVariable]]
    _meta: dict[str, Any] | None


class McpServerHttpVariant(McpServerHttp, total=False):
    type: Required[Literal["http"]]


class McpServerSseVariant(McpServerSse, total=False):
    type: Required[Literal["sse"]]


class McpServerVariant2(McpServerStdio, total=False):
    type: Any


class McpServerAcp(TypedDict, total=False):
    """An MCP server carried over the ACP connection (the unstable schema's `acp`
    transport): accepted in the shape session/fork's params allow, then refused, as acp-fsm
    does not advertise mcpCapabilities.acp."""
    type: Required[Literal["acp"]]
    name: Required[str]
    serverId: Required[str]
    _meta: dict[str, Any] | None


class NewSessionRequest(TypedDict, total=False):
    """Params of session/new."""
    cwd: Required[str]
    additionalDirectories: list[str]
    mcpServers: Required[list[McpServer]]
    systemPrompt: SystemPrompt | None
    _meta: dict[str, Any] | None


class SessionMode(TypedDict, total=False):
    """A mode the agent can operate in."""
    id: Required[SessionModeId]
    name: Required[str]
    description: str | None
    _meta: dict[str, Any] | None


class SessionModeState(TypedDict, total=False):
    """Current and available modes."""
    currentModeId: Required[SessionModeId]
    availableModes: Required[list[SessionMode]]
    _meta: dict[str, Any] | None


class SessionConfigSelectOption(TypedDict, total=False):
    """One value of a select option."""
    value: Required[SessionConfigValueId]
    name: Required[str]
    description: str | None
    _meta: dict[str, Any] | None


class SessionConfigSelectGroup(TypedDict, total=False):
    """A labelled group of select values."""
    group: Required[SessionConfigGroupId]
    name: Required[str]
    options: Required[list[SessionConfigSelectOption]]
    _meta: dict[str, Any] | None


class SessionConfigSelect(TypedDict, total=False):
    """Fields of a `select` config option."""
    currentValue: Required[SessionConfigValueId]
    options: Required[SessionConfigSelectOptions]


class SessionConfigBoolean(TypedDict, total=False):
    """Fields of a `boolean` config option."""
    currentValue: Required[bool]


class SessionConfigOptionBase(TypedDict, total=False):
    """Fields shared by every kind of config option (helper of SessionConfigOption; not an
    ACP name)."""
    id: Required[SessionConfigId]
    name: Required[str]
    description: str | None
    category: SessionConfigOptionCategory | None
    _meta: dict[str, Any] | None


class SessionConfigOptionSelect(SessionConfigOptionBase, SessionConfigSelect, total=False):
    type: Required[Literal["select"]]


class SessionConfigOptionBoolean(SessionConfigOptionBase, SessionConfigBoolean, total=False):
    type: Required[Literal["boolean"]]


class NewSessionResponse(TypedDict, total=False):
    """Result of session/new."""
    sessionId: Required[SessionId]
    modes: SessionModeState | None
    configOptions: list[SessionConfigOption] | None
    _meta: dict[str, Any] | None


class LoadSessionRequest(TypedDict, total=False):
    """Params of session/load (needs agentCapabilities.loadSession)."""
    mcpServers: Required[list[McpServer]]
    cwd: Required[str]
    additionalDirectories: list[str]
    sessionId: Required[SessionId]
    systemPrompt: SystemPrompt | None
    _meta: dict[str, Any] | None


class LoadSessionResponse(TypedDict, total=False):
    """Result of session/load, sent after the history replay."""
    modes: SessionModeState | None
    configOptions: list[SessionConfigOption] | None
    _meta: dict[str, Any] | None


class ResumeSessionRequest(TypedDict, total=False):
    """Params of session/resume (no history replay)."""
    sessionId: Required[SessionId]
    cwd: Required[str]
    additionalDirectories: list[str]
    mcpServers: list[McpServer]
    systemPrompt: SystemPrompt | None
    _meta: dict[str, Any] | None


class ResumeSessionResponse(TypedDict, total=False):
    """Result of session/resume."""
    modes: SessionModeState | None
    configOptions: list[SessionConfigOption] | None
    _meta: dict[str, Any] | None


class ForkSessionRequest(TypedDict, total=False):
    """Params of session/fork (unstable): a new session with a copy of another's
    conversation."""
    sessionId: Required[SessionId]
    cwd: Required[str]
    additionalDirectories: list[str]
    mcpServers: list[McpServer | McpServerAcp]
    systemPrompt: SystemPrompt | None
    _meta: dict[str, Any] | None


class ForkSessionResponse(TypedDict, total=False):
    """Result of session/fork."""
    sessionId: Required[SessionId]
    modes: SessionModeState | None
    configOptions: list[SessionConfigOption] | None
    _meta: dict[str, Any] | None


class SetSessionModelRequest(TypedDict, total=False):
    """Params of session/set_model (from earlier drafts; served as setting the model config
    option)."""
    sessionId: Required[SessionId]
    modelId: Required[str]
    _meta: dict[str, Any] | None


class SetSessionModelResponse(TypedDict, total=False):
    """Result of session/set_model."""
    _meta: dict[str, Any] | None


class CloseSessionRequest(TypedDict, total=False):
    """Params of session/close: cancel any work and free the session."""
    sessionId: Required[SessionId]
    _meta: dict[str, Any] | None


class CloseSessionResponse(TypedDict, total=False):
    """Result of session/close."""
    _meta: dict[str, Any] | None


class ListSessionsRequest(TypedDict, total=False):
    """Params of session/list."""
    cwd: str | None
    cursor: str | None
    _meta: dict[str, Any] | None


class SessionInfo(TypedDict, total=False):
    """Summary of a stored session."""
    sessionId: Required[SessionId]
    cwd: Required[str]
    additionalDirectories: list[str]
    title: str | None
    updatedAt: str | None
    _meta: dict[str, Any] | None


class ListSessionsResponse(TypedDict, total=False):
    """Result of session/list."""
    sessions: Required[list[SessionInfo]]
    nextCursor: str | None
    _meta: dict[str, Any] | None


class SteeringRequest(TypedDict, total=False):
    """Params of _session/steering: a message that joins the running turn."""
    sessionId: Required[SessionId]
    prompt: Required[list[ContentBlock]]
    _meta: dict[str, Any] | None


class SteeringResponse(TypedDict, total=False):
    """Result of _session/steering: what became of the message."""
    outcome: Required[str]
    reason: str
    _meta: dict[str, Any] | None


class CheckpointsRequest(TypedDict, total=False):
    """Params of _session/checkpoints: the prompts a session can be rewound to."""
    sessionId: Required[SessionId]
    _meta: dict[str, Any] | None


class CheckpointsResponse(TypedDict, total=False):
    """Result of _session/checkpoints: the session's prompts still in its conversation,
    oldest first."""
    checkpoints: Required[list[Checkpoint]]
    _meta: dict[str, Any] | None


class Checkpoint(TypedDict, total=False):
    """A prompt of the user's the session can be rewound to (to just before it)."""
    number: Required[int]
    messageId: Required[str]
    prompt: Required[str]
    changedFiles: Required[list[str]]
    ranCommands: Required[bool]


class RewindRequest(TypedDict, total=False):
    """Params of _session/rewind: restore the conversation to just before a prompt, and the
    files the agent changed since, in one step."""
    sessionId: Required[SessionId]
    messageId: Required[str]
    force: bool
    _meta: dict[str, Any] | None


class RewindResponse(TypedDict, total=False):
    """Result of _session/rewind."""
    outcome: Required[str]
    point: Checkpoint
    restored: list[str]
    changedOutside: list[str]
    commandsRanIn: list[int]
    error: str
    _meta: dict[str, Any] | None


class ProvidersCapabilities(TypedDict, total=False):
    """Present when the agent serves providers/list, providers/set and providers/disable."""
    _meta: dict[str, Any] | None


class ProviderCurrentConfig(TypedDict, total=False):
    """The non-secret routing of a provider in use."""
    apiType: Required[LlmProtocol]
    baseUrl: Required[str]
    _meta: dict[str, Any] | None


class ProviderInfo(TypedDict, total=False):
    """A configurable provider (no secret)."""
    providerId: Required[str]
    supported: Required[list[LlmProtocol]]
    required: Required[bool]
    current: ProviderCurrentConfig | None
    _meta: dict[str, Any] | None


class ListProvidersRequest(TypedDict, total=False):
    """Params of providers/list (unstable)."""
    _meta: dict[str, Any] | None


class ListProvidersResponse(TypedDict, total=False):
    """Result of providers/list."""
    providers: Required[list[ProviderInfo]]
    _meta: dict[str, Any] | None


class SetProviderRequest(TypedDict, total=False):
    """Params of providers/set (unstable): the whole configuration of one provider."""
    providerId: Required[str]
    apiType: Required[LlmProtocol]
    baseUrl: Required[str]
    headers: dict[str, Any]
    _meta: dict[str, Any] | None


class SetProviderResponse(TypedDict, total=False):
    """Result of providers/set."""
    _meta: dict[str, Any] | None


class DisableProviderRequest(TypedDict, total=False):
    """Params of providers/disable (unstable)."""
    providerId: Required[str]
    _meta: dict[str, Any] | None


class DisableProviderResponse(TypedDict, total=False):
    """Result of providers/disable."""
    _meta: dict[str, Any] | None


class SetSessionTitleRequest(TypedDict, total=False):
    """Params of session/set_title (unstable): the title the user chose."""
    sessionId: Required[SessionId]
    title: Required[str]
    _meta: dict[str, Any] | None


class SetSessionTitleResponse(TypedDict, total=False):
    """Result of session/set_title: the title as the agent stored it."""
    title: Required[str]
    _meta: dict[str, Any] | None


class SessionTitleCapabilities(TypedDict, total=False):
    """Present when the agent serves session/set_title."""
    _meta: dict[str, Any] | None


class DeleteSessionRequest(TypedDict, total=False):
    """Params of session/delete."""
    sessionId: Required[SessionId]
    _meta: dict[str, Any] | None


class DeleteSessionResponse(TypedDict, total=False):
    """Result of session/delete."""
    _meta: dict[str, Any] | None


class SetSessionModeRequest(TypedDict, total=False):
    """Params of session/set_mode."""
    sessionId: Required[SessionId]
    modeId: Required[SessionModeId]
    _meta: dict[str, Any] | None


class SetSessionModeResponse(TypedDict, total=False):
    """Result of session/set_mode."""
    _meta: dict[str, Any] | None


class SetSessionConfigOptionRequest(TypedDict, total=False):
    """Params of session/set_config_option."""
    sessionId: Required[SessionId]
    configId: Required[SessionConfigId]
    type: Any
    value: Required[Any]
    _meta: dict[str, Any] | None


class SetSessionConfigOptionResponse(TypedDict, total=False):
    """Result of session/set_config_option: the full updated option list."""
    configOptions: Required[list[SessionConfigOption]]
    _meta: dict[str, Any] | None


class PromptRequest(TypedDict, total=False):
    """Params of session/prompt: one user turn."""
    sessionId: Required[SessionId]
    prompt: Required[list[ContentBlock]]
    _meta: dict[str, Any] | None


class PromptResponse(TypedDict, total=False):
    """Result of session/prompt."""
    stopReason: Required[StopReason]
    _meta: dict[str, Any] | None


class CancelNotification(TypedDict, total=False):
    """Params of session/cancel: stop the running turn."""
    sessionId: Required[SessionId]
    _meta: dict[str, Any] | None


class ContentChunk(TypedDict, total=False):
    """A streamed piece of a message."""
    content: Required[ContentBlock]
    messageId: MessageId | None
    _meta: dict[str, Any] | None


class PlanEntry(TypedDict, total=False):
    """One step of the agent's plan."""
    content: Required[str]
    priority: Required[PlanEntryPriority]
    status: Required[PlanEntryStatus]
    _meta: dict[str, Any] | None


class Plan(TypedDict, total=False):
    """The agent's full current plan (replaces any previous one)."""
    entries: Required[list[PlanEntry]]
    _meta: dict[str, Any] | None


class UnstructuredCommandInput(TypedDict, total=False):
    """Free-text input to a command."""
    hint: Required[str]
    _meta: dict[str, Any] | None


class AvailableCommand(TypedDict, total=False):
    """A slash command the user may invoke."""
    name: Required[str]
    description: Required[str]
    input: AvailableCommandInput | None
    _meta: dict[str, Any] | None


class AvailableCommandsUpdate(TypedDict, total=False):
    """The full list of available commands."""
    availableCommands: Required[list[AvailableCommand]]
    _meta: dict[str, Any] | None


class CurrentModeUpdate(TypedDict, total=False):
    """The session's mode changed."""
    currentModeId: Required[SessionModeId]
    _meta: dict[str, Any] | None


class ConfigOptionUpdate(TypedDict, total=False):
    """The full list of config options after a change."""
    configOptions: Required[list[SessionConfigOption]]
    _meta: dict[str, Any] | None


class SessionInfoUpdate(TypedDict, total=False):
    """Changed session metadata; absent fields are unchanged."""
    title: str | None
    updatedAt: str | None
    _meta: dict[str, Any] | None


class Cost(TypedDict, total=False):
    """A monetary amount."""
    amount: Required[float]
    currency: Required[str]
    _meta: dict[str, Any] | None


class UsageUpdate(TypedDict, total=False):
    """Context window usage (and optionally cost) of the session."""
    used: Required[int]
    size: Required[int]
    cost: Cost | None
    _meta: dict[str, Any] | None


class Notice(TypedDict, total=False):
    """Transient information for the user (needs the client's session.notices
    capability)."""
    severity: Required[NoticeSeverity]
    title: Required[str]
    description: str | None
    _meta: dict[str, Any] | None


class CompactionUpdate(TypedDict, total=False):
    """Creates or patches a context compaction (needs session.compaction)."""
    compactionId: Required[CompactionId]
    status: Required[CompactionStatus]
    summary: list[ContentBlock] | None
    error: str | None
    _meta: dict[str, Any] | None


class CompactionSummaryChunk(TypedDict, total=False):
    """A streamed piece of a compaction summary."""
    compactionId: Required[CompactionId]
    content: Required[ContentBlock]
    _meta: dict[str, Any] | None


class SessionUpdateUserMessageChunk(ContentChunk, total=False):
    sessionUpdate: Required[Literal["user_message_chunk"]]


class SessionUpdateAgentMessageChunk(ContentChunk, total=False):
    sessionUpdate: Required[Literal["agent_message_chunk"]]


class SessionUpdateAgentThoughtChunk(ContentChunk, total=False):
    sessionUpdate: Required[Literal["agent_thought_chunk"]]


class SessionUpdateToolCall(ToolCall, total=False):
    sessionUpdate: Required[Literal["tool_call"]]


class SessionUpdateToolCallUpdate(ToolCallUpdate, total=False):
    sessionUpdate: Required[Literal["tool_call_update"]]


class SessionUpdatePlan(Plan, total=False):
    sessionUpdate: Required[Literal["plan"]]


class SessionUpdateAvailableCommandsUpdate(AvailableCommandsUpdate, total=False):
    sessionUpdate: Required[Literal["available_commands_update"]]


class SessionUpdateCurrentModeUpdate(CurrentModeUpdate, total=False):
    sessionUpdate: Required[Literal["current_mode_update"]]


class SessionUpdateConfigOptionUpdate(ConfigOptionUpdate, total=False):
    sessionUpdate: Required[Literal["config_option_update"]]


class SessionUpdateSessionInfoUpdate(SessionInfoUpdate, total=False):
    sessionUpdate: Required[Literal["session_info_update"]]


class SessionUpdateUsageUpdate(UsageUpdate, total=False):
    sessionUpdate: Required[Literal["usage_update"]]


class SessionUpdateNotice(Notice, total=False):
    sessionUpdate: Required[Literal["notice"]]


class SessionUpdateCompactionUpdate(CompactionUpdate, total=False):
    sessionUpdate: Required[Literal["compaction_update"]]


class SessionUpdateCompactionSummaryChunk(CompactionSummaryChunk, total=False):
    sessionUpdate: Required[Literal["compaction_summary_chunk"]]


class SubagentUpdate(TypedDict, total=False):
    """Sent on the parent session: announces a child session (its first update) or patches
    what the client holds of it; omitted fields are unchanged, null clears."""
    sessionId: Required[SessionId]
    title: str | None
    description: str | None
    capabilities: SubagentSessionCapabilities | None
    state: StateUpdate | None
    cwd: str | None
    additionalDirectories: list[str] | None
    _meta: dict[str, Any] | None


class SessionUpdateSubagentUpdate(SubagentUpdate, total=False):
    sessionUpdate: Required[Literal["subagent_update"]]


class SessionMessage(TypedDict, total=False):
    """A message between two sessions as one of them sees it (an upsert): the sender's
    outgoing view names the recipient's view (recipientMessageId), the recipient's incoming
    view the sender's (senderMessageId)."""
    messageId: Required[MessageId]
    senderSessionId: SessionId | None
    recipientSessionId: SessionId | None
    senderMessageId: MessageId | None
    recipientMessageId: MessageId | None
    content: list[ContentBlock] | None
    _meta: dict[str, Any] | None


class SessionUpdateSessionMessage(SessionMessage, total=False):
    sessionUpdate: Required[Literal["session_message"]]


class SessionNotification(TypedDict, total=False):
    """Params of session/update."""
    sessionId: Required[SessionId]
    update: Required[SessionUpdate]
    _meta: dict[str, Any] | None


class ReadTextFileRequest(TypedDict, total=False):
    """Params of fs/read_text_file."""
    sessionId: Required[SessionId]
    path: Required[str]
    line: int | None
    limit: int | None
    _meta: dict[str, Any] | None


class ReadTextFileResponse(TypedDict, total=False):
    """Result of fs/read_text_file."""
    content: Required[str]
    _meta: dict[str, Any] | None


class WriteTextFileRequest(TypedDict, total=False):
    """Params of fs/write_text_file."""
    sessionId: Required[SessionId]
    path: Required[str]
    content: Required[str]
    _meta: dict[str, Any] | None


class WriteTextFileResponse(TypedDict, total=False):
    """Result of fs/write_text_file."""
    _meta: dict[str, Any] | None


class CreateTerminalRequest(TypedDict, total=False):
    """Params of terminal/create: run a command in a client terminal."""
    sessionId: Required[SessionId]
    command: Required[str]
    args: list[str]
    env: list[EnvVariable]
    cwd: str | None
    outputByteLimit: int | None
    _meta: dict[str, Any] | None


class CreateTerminalResponse(TypedDict, total=False):
    """Result of terminal/create."""
    terminalId: Required[TerminalId]
    _meta: dict[str, Any] | None


class TerminalOutputRequest(TypedDict, total=False):
    """Params of terminal/output."""
    sessionId: Required[SessionId]
    terminalId: Required[TerminalId]
    _meta: dict[str, Any] | None


class TerminalExitStatus(TypedDict, total=False):
    """How a terminal command ended."""
    exitCode: int | None
    signal: str | None
    _meta: dict[str, Any] | None


class TerminalOutputResponse(TypedDict, total=False):
    """Result of terminal/output."""
    output: Required[str]
    truncated: Required[bool]
    exitStatus: TerminalExitStatus | None
    _meta: dict[str, Any] | None


class WaitForTerminalExitRequest(TypedDict, total=False):
    """Params of terminal/wait_for_exit."""
    sessionId: Required[SessionId]
    terminalId: Required[TerminalId]
    _meta: dict[str, Any] | None


class WaitForTerminalExitResponse(TypedDict, total=False):
    """Result of terminal/wait_for_exit."""
    exitCode: int | None
    signal: str | None
    _meta: dict[str, Any] | None


class KillTerminalRequest(TypedDict, total=False):
    """Params of terminal/kill: stop the command, keep the terminal."""
    sessionId: Required[SessionId]
    terminalId: Required[TerminalId]
    _meta: dict[str, Any] | None


class KillTerminalResponse(TypedDict, total=False):
    """Result of terminal/kill."""
    _meta: dict[str, Any] | None


class ReleaseTerminalRequest(TypedDict, total=False):
    """Params of terminal/release: kill if running and free it."""
    sessionId: Required[SessionId]
    terminalId: Required[TerminalId]
    _meta: dict[str, Any] | None


class ReleaseTerminalResponse(TypedDict, total=False):
    """Result of terminal/release."""
    _meta: dict[str, Any] | None


class CancelRequestNotification(TypedDict, total=False):
    """Params of $/cancel_request: the sender no longer needs the answer."""
    requestId: Required[RequestId]
    _meta: dict[str, Any] | None


class SubagentCapabilities(TypedDict, total=False):
    """The client shows subagents as child sessions (subagent_update, session_message,
    session tool-call content); without it the agent sends none of those."""
    _meta: dict[str, Any] | None


class SubagentSessionCapabilities(TypedDict, total=False):
    """What the client may do to one child session."""
    cancel: SessionCancelCapabilities | None
    _meta: dict[str, Any] | None


class SessionCancelCapabilities(TypedDict, total=False):
    """The client may cancel the child's current work with session/cancel (the child session
    lives on)."""
    _meta: dict[str, Any] | None


class RunningStateUpdate(TypedDict, total=False):
    """Work is in progress."""
    _meta: dict[str, Any] | None


class StateUpdateRunning(RunningStateUpdate, total=False):
    state: Required[Literal["running"]]


class IdleStateUpdate(TypedDict, total=False):
    """Ready for more work; why the last work stopped."""
    stopReason: IdleStopReason | None
    error: Error | None
    _meta: dict[str, Any] | None


class StateUpdateIdle(IdleStateUpdate, total=False):
    state: Required[Literal["idle"]]


class RequiresActionStateUpdate(TypedDict, total=False):
    """Work waits for the user (a permission request)."""
    _meta: dict[str, Any] | None


class StateUpdateRequiresAction(RequiresActionStateUpdate, total=False):
    state: Required[Literal["requires_action"]]


# ProtocolVersion: ACP major protocol version (16-bit unsigned), as the agent answers it.
ProtocolVersion: TypeAlias = 'int'
# RequestedProtocolVersion: The version a client asks for in initialize.
RequestedProtocolVersion: TypeAlias = 'int'
# RequestId: JSON-RPC request id as ACP carries it inside params (e.g. $/cancel_request).
RequestId: TypeAlias = 'str | int | None'
# SessionId: Opaque session identifier chosen by the agent.
SessionId: TypeAlias = 'str'
# ToolCallId: Identifier of a tool call, unique within its session.
ToolCallId: TypeAlias = 'str'
# TerminalId: Identifier of a terminal created by the client.
TerminalId: TypeAlias = 'str'
# PermissionOptionId: Identifier of one permission choice.
PermissionOptionId: TypeAlias = 'str'
# AuthMethodId: Identifier of an authentication method.
AuthMethodId: TypeAlias = 'str'
# SessionModeId: Identifier of a session mode.
SessionModeId: TypeAlias = 'str'
# SessionConfigId: Identifier of a session configuration option.
SessionConfigId: TypeAlias = 'str'
# SessionConfigValueId: Identifier of a value of a select configuration option.
SessionConfigValueId: TypeAlias = 'str'
# SessionConfigGroupId: Identifier of a group of select values.
SessionConfigGroupId: TypeAlias = 'str'
# MessageId: Identifier tying chunks of one message together.
MessageId: TypeAlias = 'str'
# CompactionId: Identifier of one context compaction.
CompactionId: TypeAlias = 'str'
# Role: Who a piece of content is meant for.
Role: TypeAlias = 'Literal["assistant", "user"]'
# StopReason: Why a prompt turn ended.
StopReason: TypeAlias = 'Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]'
# ToolKind: Category of a tool, used by clients to pick icons and presentation.
ToolKind: TypeAlias = 'Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]'
# ToolCallStatus: Lifecycle state of a tool call.
ToolCallStatus: TypeAlias = 'Literal["pending", "in_progress", "completed", "failed"]'
# PermissionOptionKind: What choosing a permission option means.
PermissionOptionKind: TypeAlias = 'Literal["allow_once", "allow_always", "reject_once", "reject_always"]'
# PlanEntryPriority: Relative importance of a plan entry.
PlanEntryPriority: TypeAlias = 'Literal["high", "medium", "low"]'
# PlanEntryStatus: Progress of a plan entry.
PlanEntryStatus: TypeAlias = 'Literal["pending", "in_progress", "completed"]'
# SessionConfigOptionCategory: Semantic grouping of a configuration option (e.g. the model
# picker is category `model`).
SessionConfigOptionCategory: TypeAlias = 'Literal["mode", "model", "model_config", "thought_level"] | str'
# NoticeSeverity: How prominent a notice should be.
NoticeSeverity: TypeAlias = 'Literal["info", "warning", "error"] | str'
# CompactionStatus: Progress of a context compaction.
CompactionStatus: TypeAlias = 'Literal["in_progress", "completed", "failed", "cancelled"] | str'
# ErrorCode: JSON-RPC error code. Known: -32700 parse error, -32600 invalid request, -32601
# method not found, -32602 invalid params, -32603 internal error, -32800 request cancelled,
# -32000 authentication required, -32002 resource not found.
ErrorCode: TypeAlias = 'Literal[-32700, -32600, -32601, -32602, -32603, -32800, -32000, -32002] | int'
# EmbeddedResourceResource: Body of an embedded resource: text or binary.
EmbeddedResourceResource: TypeAlias = 'TextResourceContents | BlobResourceContents'
# ContentBlock: One piece of content in prompts, messages and tool output, tagged by `type`.
ContentBlock: TypeAlias = 'ContentBlockText | ContentBlockImage | ContentBlockAudio | ContentBlockResourceLink | ContentBlockResource'
# ToolCallContent: Content produced by a tool call, tagged by `type`.
ToolCallContent: TypeAlias = 'ToolCallContentContent | ToolCallContentDiff | ToolCallContentTerminal | ToolCallContentSession'
# RequestPermissionOutcome: Result of a permission request, tagged by `outcome`.
RequestPermissionOutcome: TypeAlias = 'RequestPermissionOutcomeCancelled | RequestPermissionOutcomeSelected'
# CompactionCapabilities: Present when the client understands compaction updates.
CompactionCapabilities: TypeAlias = 'dict[str, Any]'
# NoticeCapabilities: Present when the client shows notice updates.
NoticeCapabilities: TypeAlias = 'dict[str, Any]'
# MultiSelectItems: The values a multiple choice offers: plain (`enum`) or titled (`anyOf`).
MultiSelectItems: TypeAlias = 'MultiSelectItemsString | MultiSelectItemsVariant1'
# ElicitationPropertySchema: One field of a form, tagged by `type`.
ElicitationPropertySchema: TypeAlias = 'ElicitationPropertySchemaString | ElicitationPropertySchemaNumber | ElicitationPropertySchemaInteger | ElicitationPropertySchemaBoolean | ElicitationPropertySchemaArray'
# ElicitationContentValue: The value of one field of a filled-in form.
ElicitationContentValue: TypeAlias = 'str | int | float | bool | list[str]'
# AuthMethod: An authentication method the agent offers.
AuthMethod: TypeAlias = 'AuthMethodTerminalVariant | AuthMethodAgent'
# McpServer: An MCP server the agent should connect to.
McpServer: TypeAlias = 'McpServerHttpVariant | McpServerSseVariant | McpServerVariant2'
# SessionConfigSelectOptions: Values of a select option: a flat list or a list of groups.
SessionConfigSelectOptions: TypeAlias = 'list[SessionConfigSelectOption] | list[SessionConfigSelectGroup]'
# SessionConfigOption: A session configuration option (model, mode, reasoning level, ...),
# tagged by `type`.
SessionConfigOption: TypeAlias = 'SessionConfigOptionSelect | SessionConfigOptionBoolean'
# LlmProtocol: An API protocol: anthropic, openai, azure, vertex, bedrock, or another (a name
# starting with _ is custom).
LlmProtocol: TypeAlias = 'str'
# AvailableCommandInput: How a command takes input.
AvailableCommandInput: TypeAlias = 'UnstructuredCommandInput'
# SessionUpdate: A session/update payload, tagged by `sessionUpdate`.
SessionUpdate: TypeAlias = 'SessionUpdateUserMessageChunk | SessionUpdateAgentMessageChunk | SessionUpdateAgentThoughtChunk | SessionUpdateToolCall | SessionUpdateToolCallUpdate | SessionUpdatePlan | SessionUpdateAvailableCommandsUpdate | SessionUpdateCurrentModeUpdate | SessionUpdateConfigOptionUpdate | SessionUpdateSessionInfoUpdate | SessionUpdateUsageUpdate | SessionUpdateNotice | SessionUpdateCompactionUpdate | SessionUpdateCompactionSummaryChunk | SessionUpdateSubagentUpdate | SessionUpdateSessionMessage'
# StateUpdate: A child session's foreground work, a whole snapshot, tagged by `state`.
StateUpdate: TypeAlias = 'StateUpdateRunning | StateUpdateIdle | StateUpdateRequiresAction'
# IdleStopReason: Why a child's work stopped: a prompt's stop reasons, and error (its `error`
# beside it).
IdleStopReason: TypeAlias = 'Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"]'
