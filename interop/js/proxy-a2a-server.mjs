// An A2A 1.0 server built on the A2A JavaScript SDK (@a2a-js/sdk, its Express JSON-RPC
// transport): the application behind a `dialogtrust proxy` ingress in the proxy
// interop test. Its executor reads what the ingress verified (the Dialogtrust-Verified-*
// request fields, which the SDK's default call context keeps under state "headers"),
// checks that a handoff was accepted for the expected sender in a dialog, and answers
// with a Task: completed, or failed when a check does not hold or the message asks
// for a hotel "on the moon". It sets no
// Dialogtrust-Handoff-Status field: the ingress maps the Task's state to the signed
// status. It reports what it saw in the Task's status message metadata and in a
// "seen JSON" line on stdout, one per message.
//
// Usage: node proxy-a2a-server.mjs PORT EXPECTED_SENDER. Prints "listening URL" once
// it accepts requests.
import { AgentEvent } from "@a2a-js/sdk/server";
import { Role, TaskState } from "@a2a-js/sdk";
import { CREDENTIAL_FIELDS, EXTENSION_URI, agentCard, dialogtrustFields, handoffProblems, requestedExtensions, serveA2A, serverArgs, textMessage, textsOf } from "./lib.mjs";

const SEEN_KEY = "dialogtrust.interop/seen";
const { port, expectedSender } = serverArgs("proxy-a2a-server.mjs", true);
const url = `http://127.0.0.1:${port}/a2a`;

const card = agentCard(url, "dialogtrust interop hotel", "books a hotel for a delegating agent behind a dialogtrust ingress", true, true);

const executor = {
  async execute(ctx, bus) {
    const headers = ctx.context.state.get("headers") ?? {};
    const fields = dialogtrustFields(headers);
    const msg = ctx.userMessage;
    const requested = requestedExtensions(ctx);
    const problems = handoffProblems(fields, expectedSender);
    const seen = {
      fields,
      handoff: msg.metadata ? (msg.metadata[EXTENSION_URI] ?? null) : null,
      requestedExtensions: requested,
      requestedVersion: ctx.context.requestedVersion,
      messageId: msg.messageId,
      text: textsOf(msg),
      credentialsSeen: CREDENTIAL_FIELDS.filter((name) => name in headers),
      problems,
    };
    console.log("seen " + JSON.stringify(seen));
    // A request the hotel cannot serve (the checks held, the work cannot be done):
    // a failed Task, which the ingress maps to a "failed" status.
    const unservable = seen.text.some((t) => typeof t === "string" && t.includes("on the moon"));
    const ok = problems.length === 0 && !unservable;
    bus.publish(
      AgentEvent.task({
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: {
          state: ok ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_FAILED,
          message: textMessage({
            messageId: "status-" + msg.messageId,
            contextId: ctx.contextId,
            taskId: ctx.taskId,
            role: Role.ROLE_AGENT,
            text: ok ? "booked" : "not booked: " + (unservable ? "no hotel there" : problems.join(", ")),
            metadata: { [SEEN_KEY]: seen },
          }),
          timestamp: new Date().toISOString(),
        },
        artifacts: [],
        history: [],
        metadata: undefined,
      }),
    );
    bus.finished();
  },
  async cancelTask() {},
};

await serveA2A(card, executor, port, url);
