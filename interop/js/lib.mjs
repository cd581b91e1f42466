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
// it accepts requests, and stops on SIGTERM; with released (gates), a POST
// /release/NAME releases a gate. The SDK and Express are loaded here, not when this
// module is, so that the MCP programs do not load them.
export async function serveA2A(card, executor, port, url, released = null) {
  const { default: express } = await import("express");
  const { DefaultRequestHandler, InMemoryTaskStore } = await import("@a2a-js/sdk/server");
  const { jsonRpcHandler, UserBuilder } = await import("@a2a-js/sdk/server/express");
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const app = express();
  if (released !== null) {
    app.post("/release/:name", (req, res) => {
      released.release(req.params.name);
      res.status(204).end();
    });
  }
  app.use("/a2a", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const server = app.listen(port, "127.0.0.1", () => console.log("listening " + url));
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
}

// a2aClient is the A2A SDK's client of card over its JSON-RPC transport, whose
// requests go through fetchImpl. The SDK is loaded here, as in serveA2A.
export async function a2aClient(card, fetchImpl) {
  const { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } = await import("@a2a-js/sdk/client");
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl })] }),
  );
  return factory.createFromAgentCard(card);
}

// report prints one line "KIND JSON" on stdout for a test that follows a program as it
// runs: JSON is data with, first, n, the number of this line among the KIND lines, seq,
// its number among all the reported lines (both from 1), and at, the time in
// milliseconds since the epoch. (A test waits for the n-th KIND line by its start,
// `KIND {"n":N,`.)
const reported = new Map();
let reportedAll = 0;
export function report(kind, data = {}) {
  const n = (reported.get(kind) ?? 0) + 1;
  reported.set(kind, n);
  reportedAll++;
  console.log(kind + " " + JSON.stringify({ n, seq: reportedAll, at: Date.now(), ...data }));
}

// gates are what a server's long work waits for: wait(name) settles once the test has
// released the gate of that name (release(name), on a POST /release/NAME), before or
// after the wait began. A test releases a gate only after it has seen what the work sent before
// waiting, so that nothing here waits for a time to pass.
export function gates() {
  const all = new Map();
  const gate = (name) => {
    let g = all.get(name);
    if (!g) {
      let open;
      g = { opened: new Promise((resolve) => (open = resolve)), open };
      all.set(name, g);
    }
    return g;
  };
  return {
    wait: (name) => gate(name).opened,
    release: (name) => gate(name).open(),
    // releasePath is the gate a request path /release/NAME names, else null.
    releasePath: (path) => {
      const m = /^\/release\/([A-Za-z0-9._-]+)$/.exec(path);
      return m ? m[1] : null;
    },
  };
}

// egressDialog keeps the dialog of a client of the egress: its first request asks the
// egress to start one (Dialogtrust-Start-Dialog: ?1) and every later one carries the
// Dialog-Context the egress answered with.
export function egressDialog() {
  let value = "";
  return {
    get value() {
      return value;
    },
    // ask sets the dialog's field on headers (a Headers).
    ask(headers) {
      if (value === "") headers.set("Dialogtrust-Start-Dialog", "?1");
      else headers.set("Dialog-Context", value);
    },
    // learn keeps the Dialog-Context of the first response that has one.
    learn(res) {
      const dc = res.headers.get("dialog-context");
      if (value === "" && dc) value = dc;
    },
  };
}
