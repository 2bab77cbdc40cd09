// What the interop scenarios share (scenario.mjs: ACP v1, scenario_v2.mjs: ACP v2): the
// config they are given, the SDK's version and its complaints, the checkpoints they print, the
// bounded waits, and the agents they start.

import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";

export const CALL_TIMEOUT_MS = 10_000;
export const SETTLE_MS = 150;

export const config = JSON.parse(process.argv[2]);
export const sdkVersion = JSON.parse(
  readFileSync(
    new URL("./node_modules/@agentclientprotocol/sdk/package.json", import.meta.url),
    "utf8",
  ),
).version;

// What the SDK itself complains about (a notification it failed to parse, a response to an
// unknown request) goes through console.error: kept for the summary.
export const sdkErrors = [];
const originalError = console.error;
console.error = (...args) => {
  sdkErrors.push(args.map((a) => (typeof a === "string" ? a : safeJson(a))).join(" "));
  originalError(...args);
};

export function safeJson(value) {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

export function emit(checkpoint, fields) {
  process.stdout.write(JSON.stringify({ checkpoint, ...fields }) + "\n");
}

export class Timeout extends Error {}

// After a call timed out the agent is stuck: the rest of that connection's steps are reported
// as skipped instead of each waiting for its own timeout.
let stalled = null;

/** A fresh agent: its steps are run again, whatever timed out in the one before. */
export function freshAgent() {
  stalled = null;
}

function describeError(error) {
  const fields = {
    error: String(error?.message ?? error),
    code: error?.code,
    data: error?.data,
    stack: String(error?.stack ?? ""),
  };
  if (Array.isArray(error?.issues)) fields.issues = error.issues; // a ZodError: the SDK refused
  return fields;
}

/** Run one checkpoint: ok with what `fn` returns, or not ok with the error it threw. */
export async function step(name, fn, { always = false } = {}) {
  if (stalled !== null && !always) {
    emit(name, { ok: false, skipped: true, error: `skipped: ${stalled} timed out` });
    return false;
  }
  try {
    const fields = await fn();
    emit(name, { ok: true, ...fields });
    return true;
  } catch (error) {
    if (error instanceof Timeout) stalled = name;
    emit(name, { ok: false, ...describeError(error) });
    return false;
  }
}

export function withTimeout(promise, what, ms = CALL_TIMEOUT_MS) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Timeout(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function waitUntil(predicate, what, ms = 5_000) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Timeout(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** The agent of `config.command`, its stderr written to `log`. */
export function startAgent(log) {
  const fd = openSync(log, "w");
  const [program, ...args] = config.command;
  const proc = spawn(program, args, { env: process.env, stdio: ["pipe", "pipe", fd] });
  closeSync(fd);
  const exited = new Promise((resolve) => {
    proc.on("exit", (code, signal) => resolve({ code, signal }));
  });
  proc.stdin.on("error", () => {}); // EPIPE if the agent died: reported through its exit
  return { proc, exited };
}

/** Close the agent's stdin (ACP's way to end it) and wait for its exit. */
export async function stopAgent({ proc, exited }) {
  proc.stdin.end();
  try {
    return await withTimeout(exited, "the agent to exit after stdin closed", 5_000);
  } catch (error) {
    proc.kill("SIGKILL");
    throw error;
  }
}
