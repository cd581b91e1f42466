// An A2A 1.0 server built on the A2A JavaScript SDK (@a2a-js/sdk, its Express JSON-RPC
// transport): the application behind a `dialogtrust proxy` ingress in the proxies'
// streaming interop test. Its executor does long work: it publishes the Task
// (submitted) and a status update (working, whose message names the sender and proof
// the ingress verified), then waits until the test releases its gate (POST
// /release/GATE, GATE the message's text), and only then publishes the final status
// update (completed). Answered as a SendStreamingMessage, each event is one event of
// the SDK's stream.
//
// On stdout: "listening URL" once it accepts requests, "waiting GATE" when the first
// events are published and it waits, "released GATE" when it goes on.
//
// Usage: node proxy-a2a-stream-server.mjs PORT EXPECTED_SENDER.
import { AgentEvent } from "@a2a-js/sdk/server";
import { Role, TaskState } from "@a2a-js/sdk";
import { agentCard, dialogtrustFields, gates, serveA2A, serverArgs, textMessage, textsOf } from "./lib.mjs";

const { port, expectedSender } = serverArgs("proxy-a2a-stream-server.mjs", true);
const url = `http://127.0.0.1:${port}/a2a`;
const released = gates();

const card = agentCard(url, "dialogtrust interop hotel (streaming)", "books a hotel slowly, telling the client how far it got", false, true);

const executor = {
  async execute(ctx, bus) {
    const fields = dialogtrustFields(ctx.context.state.get("headers") ?? {});
    const gate = String(textsOf(ctx.userMessage)[0] ?? "");
    const sender = fields["dialogtrust-verified-sender"] ?? "";
    const status = (state, text, metadata) => ({
      state,
      message: textMessage({ messageId: `${text}-${ctx.taskId}`, contextId: ctx.contextId, taskId: ctx.taskId, role: Role.ROLE_AGENT, text, metadata }),
      timestamp: new Date().toISOString(),
    });
    bus.publish(
      AgentEvent.task({
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: status(TaskState.TASK_STATE_SUBMITTED, "submitted", undefined),
        artifacts: [],
        history: [],
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        status: status(TaskState.TASK_STATE_WORKING, "searching", {
          sender,
          proof: fields["dialogtrust-verified-proof"] ?? "",
          senderAsExpected: sender === expectedSender,
        }),
        metadata: undefined,
      }),
    );
    console.log("waiting " + gate);
    await released.wait(gate);
    console.log("released " + gate);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        status: status(TaskState.TASK_STATE_COMPLETED, "booked", undefined),
        metadata: undefined,
      }),
    );
    bus.finished();
  },
  async cancelTask() {},
};

await serveA2A(card, executor, port, url, released);
