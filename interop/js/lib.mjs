// What the A2A and MCP peers of the interop tests share: the agent-handoff extension
// URI (handoff-context section 6), the A2A agent cards they build, the servers'
// command line, and the checks the applications behind a `dialogtrust proxy` ingress
// make on the fields it verified. It imports no SDK, so that each program loads only
// its own.

export const EXTENSION_URI = "https://quantumlearningmachines.com/a2a/ext/agent-handoff/v1";

// The credentials the ingress checks and must not forward.
export const CREDENTIAL_FIELDS = ["workload-identity-token", "txn-token", "signature", "signature-input", "dialog-provenance", "workload-proof-token"];

// agentCard is an A2A 1.0 agent card for a JSON-RPC interface at url; with
// handoff, it declares the agent-handoff extension (optional), else no extension;
// streaming says whether it serves SendStreamingMessage.
export function agentCard(url, name, description, handoff, streaming = false) {
  return {
    name,
    description,
    version: "1.0.0",
    supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
    capabilities: {
      streaming,
      pushNotifications: false,
      extensions: handoff ? [{ uri: EXTENSION_URI, description: "agent handoff", required: false, params: undefined }] : [],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
    signatures: [],
  };
}

// serverArgs reads "PORT" (and "EXPECTED_SENDER" after it, withSender) from the
// command line of script, or prints its usage and exits 2.
export function serverArgs(script, withSender) {
  const [portArg, expectedSender] = process.argv.slice(2);
  const port = Number(portArg);
  if (!Number.isInteger(port) || port <= 0 || (withSender && !expectedSender)) {
    console.error(`usage: node ${script} PORT${withSender ? " EXPECTED_SENDER" : ""}`);
    process.exit(2);
  }
  return { port, expectedSender };
}

// dialogtrustFields is every Dialogtrust-* field of the request, by lower-case name.
export function dialogtrustFields(headers) {
  const out = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const lower = name.toLowerCase();
    if (lower.startsWith("dialogtrust-")) out[lower] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

// handoffProblems names what does not hold of the verified fields: a request of
// expectedSender in a dialog, with a handoff the ingress accepted.
export function handoffProblems(fields, expectedSender) {
  const problems = [];
  if (fields["dialogtrust-verified-sender"] !== expectedSender) problems.push("sender");
  if (!fields["dialogtrust-verified-dialog"]) problems.push("dialog");
  if (fields["dialogtrust-verified-handoff"] !== "accepted") problems.push("handoff");
  if (!fields["dialogtrust-verified-handoff-hop"]) problems.push("handoff-hop");
  if (!fields["dialogtrust-verified-handoff-from"]) problems.push("handoff-from");
  return problems;
}

// requestedExtensions is what the A2A client asked for in the executor's request
// context, activating the agent-handoff extension when it is among them.
export function requestedExtensions(ctx) {
  const requested = ctx.context.requestedExtensions ? Array.from(ctx.context.requestedExtensions) : [];
  if (requested.includes(EXTENSION_URI)) {
    ctx.context.addActivatedExtension(EXTENSION_URI);
  }
  return requested;
}

// textsOf is the text of each part of an A2A message (null for a part of another kind).
export function textsOf(msg) {
  return msg.parts.map((p) => (p.content && p.content.$case === "text" ? p.content.value : null));
}

// textMessage is an A2A message of one text part (text/plain) with metadata.
export function textMessage({ messageId, contextId, taskId, role, text, metadata }) {
  return {
    messageId,
    contextId,
    taskId,
    role,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" }],
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

// serveA2A serves the agent of card and executor over the A2A SDK's Express JSON-RPC
// transport at /a2a on 127.0.0.1:port, prints "listening URL" (url, the card's) once
// it accepts requests, and stops on SIGTERM. The SDK and Express are loaded here, not
// when this module is, so that the MCP programs do not load them.
export async function serveA2A(card, executor, port, url) {
  const { default: express } = await import("express");
  const { DefaultRequestHandler, InMemoryTaskStore } = await import("@a2a-js/sdk/server");
  const { jsonRpcHandler, UserBuilder } = await import("@a2a-js/sdk/server/express");
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const app = express();
  app.use("/a2a", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const server = app.listen(port, "127.0.0.1", () => console.log("listening " + url));
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
}
