// Drives acp-fsm with the official ACP TypeScript SDK client (@agentclientprotocol/sdk).
//
// Run by tests/interop/test_typescript_sdk.py, which starts the scripted model provider,
// scripts its replies and asserts on what this prints:
//
//   node scenario.mjs '<config JSON>'
//
// config: {"command": [argv of the agent], "project": "<absolute cwd>",
//          "logs": ["<agent 1 stderr file>", "<agent 2 stderr file>"],
//          "buffers": {"<absolute path>": "<unsaved editor text>"},
//          "prompts": {"read": "...", "write": "...", "cancel": "...", "again": "..."}}
// The agent inherits this process's environment (the test sets it).
//
// Output: one JSON object per line on stdout, {"checkpoint": <name>, "ok": true|false, ...},
// in this order: initialize, session_new, read, write, cancel, exit_first, initialize_again,
// load, after_load, list, exit_second, summary. A step that throws reports ok=false with the
// error and the scenario goes on where it can. Exit status 0 unless the script itself broke.

import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk";

import {
  SETTLE_MS,
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

// The SDK parses what the agent sends it (requests and notifications) with its generated zod
// schemas, but hands responses to us as they came. We check responses with the same schemas,
// which the package does not export: import the module by its file path (the version is
// pinned in package.json).
const zod = await import(
  new URL("./node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js", import.meta.url)
);

/** A response checked with the SDK's own schema for it (throws a ZodError if it fails). */
function checked(schema, response) {
  schema.parse(response);
  return response;
}

// ---------------------------------------------------------------------------- the editor

/** Our client: answers the agent's requests and records everything. */
class Editor {
  constructor(buffers) {
    this.buffers = new Map(Object.entries(buffers));
    this.updates = []; // session/update params, as the SDK parsed them
    this.calls = []; // [method, params] of agent requests we answered
    this.wire = []; // {dir: "in" | "out", message}, in order
  }

  app() {
    return acp
      .client({ name: "acp-fsm-interop-node" })
      .onRequest("session/request_permission", ({ params }) => {
        this.calls.push(["session/request_permission", params]);
        const option = params.options.find((o) => o.kind === "allow_once");
        return { outcome: { outcome: "selected", optionId: option.optionId } };
      })
      .onRequest("fs/read_text_file", ({ params }) => {
        this.calls.push(["fs/read_text_file", params]);
        let text = this.buffers.get(params.path);
        if (text === undefined) {
          try {
            text = readFileSync(params.path, "utf8");
          } catch {
            throw acp.RequestError.resourceNotFound(params.path);
          }
        }
        const lines = text.split(/(?<=\n)/).slice((params.line ?? 1) - 1);
        const kept = params.limit == null ? lines : lines.slice(0, params.limit);
        return { content: kept.join("") };
      })
      .onRequest("fs/write_text_file", ({ params }) => {
        this.calls.push(["fs/write_text_file", params]);
        this.buffers.set(params.path, params.content);
        return {};
      })
      .onNotification("session/update", ({ params }) => {
        this.updates.push(params);
      });
  }

  /** The SDK's stdio stream to the agent, with both directions recorded. */
  stream(proc) {
    const base = acp.ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout), {
      maxMessageBytes: 64 * 1024 * 1024,
    });
    const wire = this.wire;
    const readable = base.readable.pipeThrough(
      new TransformStream({
        transform(message, controller) {
          wire.push({ dir: "in", message });
          controller.enqueue(message);
        },
      }),
    );
    const writer = base.writable.getWriter();
    const writable = new WritableStream({
      async write(message) {
        wire.push({ dir: "out", message });
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

  sessionUpdates(sessionId, start = 0) {
    return this.updates
      .slice(start)
      .filter((n) => n.sessionId === sessionId)
      .map((n) => n.update);
  }

  callsOf(method) {
    return this.calls.filter(([m]) => m === method).map(([, params]) => params);
  }

  /** Agent messages the SDK dropped or refused: the wire against what reached us. */
  health() {
    const incoming = this.wire.filter((e) => e.dir === "in").map((e) => e.message);
    return {
      wireUpdates: incoming.filter((m) => m.method === "session/update").length,
      deliveredUpdates: this.updates.length,
      refused: this.wire.filter((e) => e.dir === "out" && "error" in e.message),
    };
  }
}

function texts(updates) {
  return updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text")
    .map((u) => u.content.text);
}

// ------------------------------------------------------------------------------ the agent

const initializeParams = {
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
  clientInfo: { name: "acp-fsm-interop-node", version: sdkVersion },
};

// ------------------------------------------------------------------------- the scenario

const { project, prompts } = config;
const health = [];
let sessionId = null;

// First process: initialize, session/new, read, write with permission, cancel.
{
  const editor = new Editor(config.buffers);
  const agentProcess = startAgent(config.logs[0]);
  try {
    await editor.app().connectWith(editor.stream(agentProcess.proc), async (agent) => {
      if (
        !(await step("initialize", async () => {
          const response = await withTimeout(
            agent.request("initialize", initializeParams),
            "initialize",
          );
          return { response: checked(zod.zInitializeResponse, response), sdkVersion };
        }))
      ) {
        return;
      }
      let session = null;
      await step("session_new", async () => {
        session = await withTimeout(agent.buildSession(project).start(), "session/new");
        checked(zod.zNewSessionResponse, session.newSessionResponse);
        sessionId = session.sessionId;
        return { sessionId };
      });
      if (session === null) return;

      // The SDK's session helper queues this session's updates up to each stop: read them
      // back to check it saw the same turn as our handler.
      async function helperKinds() {
        const kinds = [];
        for (;;) {
          const message = await withTimeout(session.nextUpdate(), "ActiveSession.nextUpdate");
          if (message.kind === "stop") {
            kinds.push(`stop:${message.stopReason}`);
            return kinds;
          }
          kinds.push(message.update.sessionUpdate);
        }
      }

      async function turn(prompt) {
        const start = editor.updates.length;
        const calls = editor.calls.length;
        const response = await withTimeout(session.prompt(prompt), `session/prompt ${prompt}`);
        checked(zod.zPromptResponse, response);
        return {
          stopReason: response.stopReason,
          updates: editor.sessionUpdates(sessionId, start),
          calls: editor.calls.slice(calls),
          helper: await helperKinds(),
        };
      }

      await step("read", () => turn(prompts.read));
      await step("write", async () => ({
        ...(await turn(prompts.write)),
        buffers: Object.fromEntries(editor.buffers),
      }));
      await step("cancel", async () => {
        const start = editor.updates.length;
        const pending = session.prompt(prompts.cancel);
        pending.catch(() => {}); // awaited below; keep an early rejection from going unhandled
        await waitUntil(
          () => texts(editor.sessionUpdates(sessionId, start)).length >= 2,
          "two streamed chunks",
        );
        await agent.notify("session/cancel", { sessionId });
        const response = await withTimeout(pending, "the cancelled prompt's response", 3_000);
        checked(zod.zPromptResponse, response);
        return {
          stopReason: response.stopReason,
          updates: editor.sessionUpdates(sessionId, start),
          helper: await helperKinds(),
        };
      });
      session.dispose();
    });
  } catch (error) {
    emit("connection", { ok: false, error: String(error?.message ?? error) });
  }
  health.push(editor.health());
  await step("exit_first", () => stopAgent(agentProcess), { always: true });
  freshAgent();
}

// Second process: session/load with replay, a prompt in the loaded session, session/list.
if (sessionId !== null) {
  const editor = new Editor(config.buffers);
  const agentProcess = startAgent(config.logs[1]);
  try {
    await editor.app().connectWith(editor.stream(agentProcess.proc), async (agent) => {
      if (
        !(await step("initialize_again", async () => {
          const response = await withTimeout(
            agent.request("initialize", initializeParams),
            "initialize",
          );
          return { response: checked(zod.zInitializeResponse, response) };
        }))
      ) {
        return;
      }
      await step("load", async () => {
        const response = await withTimeout(
          agent.request("session/load", { sessionId, cwd: project, mcpServers: [] }),
          "session/load",
        );
        checked(zod.zLoadSessionResponse, response);
        const load = editor.wire.find((e) => e.dir === "out" && e.message.method === "session/load");
        const answer = editor.wire.findIndex(
          (e) => e.dir === "in" && !("method" in e.message) && e.message.id === load.message.id,
        );
        await sleep(SETTLE_MS);
        const isUpdate = (e) => e.dir === "in" && e.message.method === "session/update";
        return {
          response,
          replayed: editor.sessionUpdates(sessionId),
          beforeResponse: editor.wire.slice(0, answer).filter(isUpdate).length,
          afterResponse: editor.wire.slice(answer + 1).filter(isUpdate).length,
        };
      });
      await step("after_load", async () => {
        const start = editor.updates.length;
        const response = await withTimeout(
          agent.request("session/prompt", {
            sessionId,
            prompt: [{ type: "text", text: prompts.again }],
          }),
          "session/prompt after load",
        );
        checked(zod.zPromptResponse, response);
        return { stopReason: response.stopReason, updates: editor.sessionUpdates(sessionId, start) };
      });
      await step("list", async () => {
        const all = await withTimeout(agent.request("session/list", {}), "session/list");
        const mine = await withTimeout(
          agent.request("session/list", { cwd: project }),
          "session/list with cwd",
        );
        return {
          all: checked(zod.zListSessionsResponse, all),
          mine: checked(zod.zListSessionsResponse, mine),
        };
      });
    });
  } catch (error) {
    emit("connection", { ok: false, error: String(error?.message ?? error) });
  }
  health.push(editor.health());
  await step("exit_second", () => stopAgent(agentProcess), { always: true });
}

emit("summary", { ok: true, sdkVersion, sdkErrors, health });
