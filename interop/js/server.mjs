// An A2A 1.0 server built on the A2A JavaScript SDK (@a2a-js/sdk, its Express JSON-RPC
// transport): the delegate side of the interop test. Its executor reads the handoff the
// request's message carries under the agent-handoff extension URI (handoff-context
// section 6) and answers with a Message that echoes, untouched, what it saw: the value
// under the URI, the extensions the client requested and the A2A version it named.
//
// Usage: node server.mjs PORT. Prints "listening URL" once it accepts requests.
import express from "express";
import { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } from "@a2a-js/sdk/server";
import { jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { Role } from "@a2a-js/sdk";
import { EXTENSION_URI, agentCard, requestedExtensions, serverArgs, textsOf } from "./lib.mjs";

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
      AgentEvent.message({
        messageId: "reply-" + msg.messageId,
        contextId: ctx.contextId,
        taskId: "",
        role: Role.ROLE_AGENT,
        parts: [{ content: { $case: "text", value: "seen" }, metadata: undefined, filename: "", mediaType: "text/plain" }],
        metadata: { "dialogtrust.interop/seen": seen },
        extensions: [],
        referenceTaskIds: [],
      }),
    );
    bus.finished();
  },
  async cancelTask() {},
};

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
const app = express();
app.use("/a2a", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
const server = app.listen(port, "127.0.0.1", () => console.log("listening " + url));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
