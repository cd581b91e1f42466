// An A2A 1.0 server built on the A2A JavaScript SDK (@a2a-js/sdk, its Express JSON-RPC
// transport): the delegate side of the interop test. Its executor reads the handoff the
// request's message carries under the agent-handoff extension URI (handoff-context
// section 6) and answers with a Message that echoes, untouched, what it saw: the value
// under the URI, the extensions the client requested and the A2A version it named.
//
// Usage: node server.mjs PORT. Prints "listening URL" once it accepts requests.
import { AgentEvent } from "@a2a-js/sdk/server";
import { Role } from "@a2a-js/sdk";
import { EXTENSION_URI, agentCard, requestedExtensions, serveA2A, serverArgs, textMessage, textsOf } from "./lib.mjs";

const { port } = serverArgs("server.mjs", false);
const url = `http://127.0.0.1:${port}/a2a`;

const card = agentCard(url, "dialogtrust interop delegate", "echoes the agent-handoff extension it receives", true);

const executor = {
  async execute(ctx, bus) {
    const msg = ctx.userMessage;
    const requested = requestedExtensions(ctx);
    const seen = {
      handoff: msg.metadata ? msg.metadata[EXTENSION_URI] ?? null : null,
      requestedExtensions: requested,
      requestedVersion: ctx.context.requestedVersion,
      messageId: msg.messageId,
      role: msg.role,
      text: textsOf(msg),
    };
    console.log("seen " + JSON.stringify(seen));
    bus.publish(
      AgentEvent.message(
        textMessage({
          messageId: "reply-" + msg.messageId,
          contextId: ctx.contextId,
          taskId: "",
          role: Role.ROLE_AGENT,
          text: "seen",
          metadata: { "dialogtrust.interop/seen": seen },
        }),
      ),
    );
    bus.finished();
  },
  async cancelTask() {},
};

await serveA2A(card, executor, port, url);
