// Drives acp-fsm's ACP v2 with the official TypeScript SDK's experimental v2 client
// (@agentclientprotocol/sdk/experimental/v2 and .../experimental/ws-client).
//
// Run by tests/interop/test_typescript_sdk_v2.py, which starts the scripted model provider and
// the WebSocket server, scripts the model's replies and asserts on what this prints:
//
//   node [--experimental-websocket] scenario_v2.mjs '<config JSON>'
//
// config: {"command": [argv of the stdio agent], "project": "<absolute cwd>",
//          "logs": ["<agent 1 stderr file>", "<agent 2 stderr file>"],
//          "prompts": {"text": "...", "write": "...", "cancel": "...", "again": "...",
//                      "ws": "..."},
//          "ws": {"url": "ws://HOST:PORT/acp", "token": "..."} | null}
// The stdio agents inherit this process's environment (the test sets it, v2 on).
//
// Output: one JSON object per line on stdout, {"checkpoint": <name>, "ok": true|false, ...},
// in this order: initialize, session_new, text, write, cancel, exit_first, initialize_again,
// resume, after_resume, exit_second, ws_initialize, ws_session_new, ws_prompt, summary.
// A step that throws reports ok=false with the error (a ZodError's issues when the SDK refused
// what the agent sent) and the scenario goes on where it can. Exit status 0 unless the script
// itself broke.
//
// Besides the SDK's own verdicts (a response it fails to parse rejects the request; an agent
// request it fails to parse is answered with an error; a notification it fails to parse is
// logged through console.error and dropped), every message from the agent is parsed again here
// with the SDK's v2 schemas, stable and unstable, and compared with what was on the wire: the
// SDK's parsers are lenient (a malformed optional field is silently dropped, a malformed array
// item skipped), so a field lost in parsing is reported in the summary as a "drop".

import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk/experimental/v2";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

import {
  CALL_TIMEOUT_MS,
  SETTLE_MS,
  Timeout,
  config,
  emit,
  freshAgent,
  sdkErrors,
  sdkVersion,
  sleep,
  startAgent,
  step,
  stopAgent,
  waitUntil,
  withTimeout,
} from "./steps.mjs";

// The generated zod schemas are not exported by the package: import them by file path (the
// version is pinned in package.json).
const stable = await import(
  new URL("./node_modules/@agentclientprotocol/sdk/dist/v2/schema/zod.gen.js", import.meta.url)
);
const unstable = await import(
  new URL(
    "./node_modules/@agentclientprotocol/sdk/dist/v2/unstable/schema/zod.gen.js",
    import.meta.url,
  )
);

const INFO = { name: "acp-fsm-interop-node-v2", version: sdkVersion };

// ------------------------------------------------------------------- lenient-parse check

// The SDK's schema of each message the agent sends, by method (requests and notifications)
// or by the method of the request a response answers.
function schemaOf(zod, kind, method) {
  const table = {
    request: { "session/request_permission": zod.zRequestPermissionRequest },
    notification: { "session/update": zod.zUpdateSessionNotification },
    response: {
      initialize: zod.zInitializeResponse,
      "session/new": zod.zNewSessionResponse,
      "session/prompt": zod.zPromptResponse,
      "session/resume": zod.zResumeSessionResponse,
      "session/list": zod.zListSessionsResponse,
    },
  };
  return table[kind][method];
}

/** Paths of `raw` that `parsed` lost or changed (what the parser added is not counted). */
function lost(raw, parsed, path = "$") {
  if (raw === parsed) return [];
  if (Array.isArray(raw)) {
    if (!Array.isArray(parsed)) return [path];
    if (raw.length !== parsed.length) return [`${path} (${raw.length} items, ${parsed.length} kept)`];
    return raw.flatMap((item, i) => lost(item, parsed[i], `${path}[${i}]`));
  }
  if (raw !== null && typeof raw === "object") {
    if (parsed === null || typeof parsed !== "object") return [path];
    return Object.keys(raw).flatMap((key) =>
      key in parsed ? lost(raw[key], parsed[key], `${path}.${key}`) : [`${path}.${key}`],
    );
  }
  return [path];
}

/** What `zod`'s schema for this message makes of it: refused (with the issues) or lost paths. */
function verdict(zod, kind, method, payload) {
  const schema = schemaOf(zod, kind, method);
  if (schema === undefined) return { unchecked: true };
  const result = schema.safeParse(payload);
  if (!result.success) return { refused: result.error.issues };
  return { lost: lost(payload, result.data) };
}

// ---------------------------------------------------------------------------- the editor

/** Our client: answers the agent's requests and records everything. */
class Editor {
  constructor(label) {
    this.label = label;
    this.updates = []; // session/update params, as the SDK parsed them
    this.asked = []; // session/request_permission params, as the SDK parsed them
    this.wire = []; // {dir: "in" | "out", message}, in order
  }

  app() {
    return acp
      .client({ name: "acp-fsm-interop-node-v2" })
      .onRequest("session/request_permission", ({ params }) => {
        this.asked.push(params);
        const option = params.options.find((o) => o.kind === "allow_once");
        if (option === undefined) return { outcome: { outcome: "cancelled" } };
        return { outcome: { outcome: "selected", optionId: option.optionId } };
      })
      .onNotification("session/update", ({ params }) => {
        this.updates.push(params);
      });
  }

  /** Wraps a transport stream so both directions are recorded. */
  tap(base) {
    const wire = this.wire;
    const readable = base.readable.pipeThrough(
      new TransformStream({
        transform(message, controller) {
          wire.push({ dir: "in", message: structuredClone(message) });
          controller.enqueue(message);
        },
      }),
    );
    const writer = base.writable.getWriter();
    const writable = new WritableStream({
      async write(message) {
        wire.push({ dir: "out", message: structuredClone(message) });
        await writer.write(message);
      },
      async close() {
        await writer.close();
      },
      async abort(reason) {
        await writer.abort(reason);
      },
    });
    return { readable, writable };
  }

  stdio(proc) {
    return this.tap(
      acp.ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout), {
        maxMessageBytes: 64 * 1024 * 1024,
      }),
    );
  }

  sessionUpdates(sessionId, start = 0) {
    return this.updates
      .slice(start)
      .filter((n) => n.sessionId === sessionId)
      .map((n) => n.update);
  }

  /** The raw result of our request `method` (the last one), as it came on the wire. */
  rawResult(method) {
    const sent = this.wire.filter((e) => e.dir === "out" && e.message.method === method).at(-1);
    if (sent === undefined) return undefined;
    const answer = this.wire.find(
      (e) => e.dir === "in" && !("method" in e.message) && e.message.id === sent.message.id,
    );
    return answer?.message.result;
  }

  /** Where the answer to our last `method` request is on the wire (index in `wire`). */
  answerIndex(method) {
    const sent = this.wire.filter((e) => e.dir === "out" && e.message.method === method).at(-1);
    return this.wire.findIndex(
      (e) => e.dir === "in" && !("method" in e.message) && e.message.id === sent?.message.id,
    );
  }

  /** Every message from the agent, checked against the SDK's stable and unstable schemas. */
  checks() {
    const methodOfId = new Map();
    for (const e of this.wire) {
      if (e.dir === "out" && "method" in e.message && "id" in e.message) {
        methodOfId.set(e.message.id, e.message.method);
      }
    }
    const rows = [];
    for (const e of this.wire) {
      if (e.dir !== "in") continue;
      const m = e.message;
      let kind;
      let method;
      let payload;
      if ("method" in m) {
        kind = "id" in m ? "request" : "notification";
        method = m.method;
        payload = m.params;
      } else if ("result" in m) {
        kind = "response";
        method = methodOfId.get(m.id);
        payload = m.result;
      } else {
        continue; // an error response: the step that sent the request reports it
      }
      const row = {
        kind,
        method,
        stable: verdict(stable, kind, method, payload),
        unstable: verdict(unstable, kind, method, payload),
      };
      const bad = (v) => v.unchecked || v.refused !== undefined || v.lost.length > 0;
      if (bad(row.stable) || bad(row.unstable)) rows.push({ ...row, message: m });
    }
    return rows;
  }

  /** Agent messages the SDK dropped or refused: the wire against what reached us. */
  health() {
    const incoming = this.wire.filter((e) => e.dir === "in").map((e) => e.message);
    return {
      label: this.label,
      wireUpdates: incoming.filter((m) => m.method === "session/update").length,
      deliveredUpdates: this.updates.length,
      wirePermissionRequests: incoming.filter((m) => m.method === "session/request_permission")
        .length,
      deliveredPermissionRequests: this.asked.length,
      // our error answers to the agent's requests (the SDK refusing their params) and the
      // agent's error answers to ours
      refused: this.wire.filter((e) => e.dir === "out" && "error" in e.message),
      agentErrors: this.wire.filter((e) => e.dir === "in" && "error" in e.message),
      checks: this.checks(),
    };
  }
}

const isIdle = (u) => u.sessionUpdate === "state_update" && u.state === "idle";

function texts(updates) {
  return updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text")
    .map((u) => u.content.text);
}

/** The session's updates from `start` up to and including its next idle state. */
async function untilIdle(editor, sessionId, start, what, ms = CALL_TIMEOUT_MS) {
  await waitUntil(
    () => editor.sessionUpdates(sessionId, start).some(isIdle),
    `the idle state_update after ${what}`,
    ms,
  );
  const updates = editor.sessionUpdates(sessionId, start);
  return updates.slice(0, updates.findIndex(isIdle) + 1);
}

/** The ActiveSession helper's view: its messages up to its next stop. */
async function helperKinds(session) {
  const kinds = [];
  for (;;) {
    const message = await withTimeout(session.nextUpdate(), "ActiveSession.nextUpdate");
    if (message.kind === "stop") {
      kinds.push(`stop:${message.stopReason}`);
      return kinds;
    }
    kinds.push(message.update.sessionUpdate === "state_update"
      ? `state_update:${message.update.state}`
      : message.update.sessionUpdate);
  }
}

// ------------------------------------------------------------------------------ the agent

const initializeParams = { protocolVersion: acp.PROTOCOL_VERSION, info: INFO, capabilities: {} };

async function initialize(editor, agent) {
  const response = await withTimeout(agent.request("initialize", initializeParams), "initialize");
  const snapshot = await withTimeout(agent.initialized, "ClientContext.initialized");
  return {
    response, // as the SDK parsed it
    raw: editor.rawResult("initialize"),
    snapshotVersion: snapshot.response.protocolVersion,
    sentVersion: editor.wire.find((e) => e.dir === "out" && e.message.method === "initialize")
      ?.message.params.protocolVersion,
    sdkVersion,
  };
}

// ------------------------------------------------------------------------- the scenario

const { project, prompts } = config;
const health = [];
let sessionId = null;

// First process: initialize, session/new, a text turn, a write asking permission, a cancel.
{
  const editor = new Editor("stdio-1");
  const agentProcess = startAgent(config.logs[0]);
  try {
    await editor.app().connectWith(editor.stdio(agentProcess.proc), async (agent) => {
      if (!(await step("initialize", () => initialize(editor, agent)))) return;
      let session = null;
      await step("session_new", async () => {
        session = await withTimeout(agent.buildSession(project).start(), "session/new");
        sessionId = session.sessionId;
        await sleep(SETTLE_MS);
        return {
          sessionId,
          response: session.newSessionResponse,
          raw: editor.rawResult("session/new"),
          updates: editor.sessionUpdates(sessionId),
        };
      });
      if (session === null) return;

      async function turn(prompt) {
        const start = editor.updates.length;
        const response = await withTimeout(session.prompt(prompt), `session/prompt ${prompt}`);
        const updates = await untilIdle(editor, sessionId, start, `prompt ${prompt}`);
        return {
          response,
          raw: editor.rawResult("session/prompt"),
          updates,
          helper: await helperKinds(session),
        };
      }

      await step("text", () => turn(prompts.text));
      await step("write", async () => {
        const asked = editor.asked.length;
        return { ...(await turn(prompts.write)), asked: editor.asked.slice(asked) };
      });
      await step("cancel", async () => {
        const start = editor.updates.length;
        const pending = session.prompt(prompts.cancel);
        pending.catch(() => {}); // awaited below; keep an early rejection from going unhandled
        await waitUntil(
          () => texts(editor.sessionUpdates(sessionId, start)).length >= 2,
          "two streamed chunks",
        );
        await agent.notify("session/cancel", { sessionId });
        const updates = await untilIdle(editor, sessionId, start, "session/cancel", 3_000);
        let response = null;
        let rejected = null;
        try {
          response = await withTimeout(pending, "the cancelled prompt's response", 3_000);
        } catch (error) {
          if (error instanceof Timeout) throw error;
          rejected = describeError(error);
        }
        return { response, rejected, updates, helper: await helperKinds(session) };
      });
      session.dispose();
    });
  } catch (error) {
    emit("connection", { ok: false, ...describeError(error) });
  }
  health.push(editor.health());
  await step("exit_first", () => stopAgent(agentProcess), { always: true });
  freshAgent();
}

// Second process: session/resume replaying from the start, then a prompt in the session.
if (sessionId !== null) {
  const editor = new Editor("stdio-2");
  const agentProcess = startAgent(config.logs[1]);
  try {
    await editor.app().connectWith(editor.stdio(agentProcess.proc), async (agent) => {
      if (!(await step("initialize_again", () => initialize(editor, agent)))) return;
      await step("resume", async () => {
        const response = await withTimeout(
          agent.request("session/resume", {
            sessionId,
            cwd: project,
            mcpServers: [],
            replayFrom: { type: "start" },
          }),
          "session/resume",
        );
        const answer = editor.answerIndex("session/resume");
        await sleep(SETTLE_MS);
        const isUpdate = (e) => e.dir === "in" && e.message.method === "session/update";
        const before = editor.wire.slice(0, answer).filter(isUpdate);
        return {
          response,
          raw: editor.rawResult("session/resume"),
          replayed: editor.sessionUpdates(sessionId),
          beforeResponse: before.length,
          lastBeforeResponse: before.at(-1)?.message.params.update ?? null,
          afterResponse: editor.wire.slice(answer + 1).filter(isUpdate).length,
        };
      });
      await step("after_resume", async () => {
        const start = editor.updates.length;
        const response = await withTimeout(
          agent.request("session/prompt", {
            sessionId,
            prompt: [{ type: "text", text: prompts.again }],
          }),
          "session/prompt after resume",
        );
        const updates = await untilIdle(editor, sessionId, start, "the prompt after resume");
        return { response, updates };
      });
    });
  } catch (error) {
    emit("connection", { ok: false, ...describeError(error) });
  }
  health.push(editor.health());
  await step("exit_second", () => stopAgent(agentProcess), { always: true });
  freshAgent();
}

// WebSocket: initialize, session/new and one prompt through the SDK's ws-client.
if (config.ws) {
  const editor = new Editor("websocket");
  // undici's WebSocket (Node's global) takes headers in its init object, not a third argument
  class HeaderWebSocket {
    constructor(url, protocols, options) {
      return new globalThis.WebSocket(url, {
        protocols: protocols ?? [],
        headers: options?.headers,
      });
    }
  }
  try {
    if (typeof globalThis.WebSocket !== "function") {
      throw new Error("no globalThis.WebSocket in this node (run it with --experimental-websocket)");
    }
    const stream = createWebSocketStream(config.ws.url, {
      WebSocket: HeaderWebSocket,
      headers: { Authorization: `Bearer ${config.ws.token}` },
    });
    await editor.app().connectWith(editor.tap(stream), async (agent) => {
      if (!(await step("ws_initialize", () => initialize(editor, agent)))) return;
      let session = null;
      let wsSession = null;
      await step("ws_session_new", async () => {
        session = await withTimeout(agent.buildSession(project).start(), "session/new");
        wsSession = session.sessionId;
        return { sessionId: wsSession, raw: editor.rawResult("session/new") };
      });
      if (session === null) return;
      await step("ws_prompt", async () => {
        const start = editor.updates.length;
        const response = await withTimeout(session.prompt(prompts.ws), "session/prompt (ws)");
        const updates = await untilIdle(editor, wsSession, start, "the prompt over WebSocket");
        return { response, raw: editor.rawResult("session/prompt"), updates };
      });
      session.dispose();
    });
  } catch (error) {
    emit("connection", { ok: false, ...describeError(error) });
  }
  health.push(editor.health());
}

emit("summary", { ok: true, sdkVersion, sdkErrors, health });
