// The MCP server the conformance suite (@modelcontextprotocol/conformance, its server
// scenarios) runs against in interop/mcpconformance_test.go: our own "everything
// server", built on the official TypeScript MCP SDK (@modelcontextprotocol/sdk), with
// the tools, resources, prompts and completions the scenarios call by name, the way a
// real local server would be written with the SDK:
//
//   - createMcpExpressApp: an Express app bound to 127.0.0.1 with the SDK's DNS
//     rebinding protection (its Host header validation: a request whose Host names
//     anything but localhost, 127.0.0.1 or [::1] is answered 403 before its body is
//     read), which the dns-rebinding-protection scenario checks;
//   - the Streamable HTTP transport with sessions (Mcp-Session-Id), one low-level
//     Server per session, and an event store so that a stream can be resumed with
//     Last-Event-ID (server-sse-polling);
//   - requests to the client (sampling, elicitation) and notifications (logging,
//     progress) sent in the event stream of the tools/call that causes them.
//
// Usage: node everything-server.mjs PORT. Prints "listening URL" (the /mcp endpoint)
// once it accepts requests, and "session opened ID" / "session closed ID" as sessions
// come and go.
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  isInitializeRequest,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error("usage: node everything-server.mjs PORT");
  process.exit(2);
}

// A 1x1 PNG (one opaque red pixel), the image of the image tools and prompt.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

// wav is a short mono 8-bit PCM WAV file (RIFF header and a 440 Hz tone), base64.
function wav() {
  const rate = 8000;
  const samples = Buffer.alloc(rate / 10);
  for (let i = 0; i < samples.length; i++) {
    samples[i] = 128 + Math.round(100 * Math.sin((2 * Math.PI * 440 * i) / rate));
  }
  const h = Buffer.alloc(44);
  h.write("RIFF", 0);
  h.writeUInt32LE(36 + samples.length, 4);
  h.write("WAVE", 8);
  h.write("fmt ", 12);
  h.writeUInt32LE(16, 16); // fmt chunk size
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate, 28); // bytes per second
  h.writeUInt16LE(1, 32); // block align
  h.writeUInt16LE(8, 34); // bits per sample
  h.write("data", 36);
  h.writeUInt32LE(samples.length, 40);
  return Buffer.concat([h, samples]).toString("base64");
}
const WAV = wav();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t) => ({ type: "text", text: t });
const noArgs = { type: "object", properties: {} };

// The tools, by name: what tools/list shows, and what tools/call does.
const tools = {
  test_simple_text: {
    description: "returns one text content",
    inputSchema: noArgs,
    run: async () => ({ content: [text("This is a simple text response for testing.")] }),
  },
  test_image_content: {
    description: "returns one PNG image",
    inputSchema: noArgs,
    run: async () => ({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] }),
  },
  test_audio_content: {
    description: "returns one WAV audio clip",
    inputSchema: noArgs,
    run: async () => ({ content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] }),
  },
  test_embedded_resource: {
    description: "returns an embedded text resource",
    inputSchema: noArgs,
    run: async () => ({
      content: [
        {
          type: "resource",
          resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." },
        },
      ],
    }),
  },
  test_multiple_content_types: {
    description: "returns text, an image and an embedded resource",
    inputSchema: noArgs,
    run: async () => ({
      content: [
        text("Multiple content types test:"),
        { type: "image", data: PNG, mimeType: "image/png" },
        {
          type: "resource",
          resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: JSON.stringify({ test: "data", value: 123 }) },
        },
      ],
    }),
  },
  test_tool_with_logging: {
    description: "sends three info log messages while it runs",
    inputSchema: noArgs,
    run: async (_args, ctx) => {
      await ctx.log("info", "Tool execution started");
      await sleep(50);
      await ctx.log("info", "Tool processing data");
      await sleep(50);
      await ctx.log("info", "Tool execution completed");
      return { content: [text("logged three messages")] };
    },
  },
  test_error_handling: {
    description: "always fails, as a tool error (isError)",
    inputSchema: noArgs,
    run: async () => ({ isError: true, content: [text("This tool intentionally returns an error for testing")] }),
  },
  test_tool_with_progress: {
    description: "reports progress 0, 50 and 100 of 100 when given a progress token",
    inputSchema: noArgs,
    run: async (_args, ctx) => {
      for (const progress of [0, 50, 100]) {
        if (progress > 0) await sleep(50);
        await ctx.progress(progress, 100);
      }
      return { content: [text("progress reported")] };
    },
  },
  test_sampling: {
    description: "asks the client's LLM (sampling/createMessage) and returns its answer",
    inputSchema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] },
    run: async (args, ctx) => {
      const r = await ctx.request(
        {
          method: "sampling/createMessage",
          params: { messages: [{ role: "user", content: text(String(args.prompt ?? "")) }], maxTokens: 100 },
        },
        CreateMessageResultSchema,
      );
      const answer = r.content?.type === "text" ? r.content.text : JSON.stringify(r.content);
      return { content: [text("LLM response: " + answer)] };
    },
  },
  test_elicitation: {
    description: "asks the user (elicitation/create) for a username and an email",
    inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
    run: async (args, ctx) =>
      elicit(ctx, String(args.message ?? ""), {
        type: "object",
        properties: {
          username: { type: "string", description: "User's response" },
          email: { type: "string", description: "User's email address" },
        },
        required: ["username", "email"],
      }, "User response"),
  },
  test_elicitation_sep1034_defaults: {
    description: "elicits fields of every primitive type, each with a default (SEP-1034)",
    inputSchema: noArgs,
    run: async (_args, ctx) =>
      elicit(ctx, "Please review your profile", {
        type: "object",
        properties: {
          name: { type: "string", description: "Name", default: "John Doe" },
          age: { type: "integer", description: "Age", default: 30 },
          score: { type: "number", description: "Score", default: 95.5 },
          status: { type: "string", description: "Status", enum: ["active", "inactive", "pending"], default: "active" },
          verified: { type: "boolean", description: "Verified", default: true },
        },
      }),
  },
  test_elicitation_sep1330_enums: {
    description: "elicits the five kinds of enumerated choices (SEP-1330)",
    inputSchema: noArgs,
    run: async (_args, ctx) =>
      elicit(ctx, "Please choose", {
        type: "object",
        properties: {
          untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
          titledSingle: {
            type: "string",
            oneOf: [
              { const: "value1", title: "First Option" },
              { const: "value2", title: "Second Option" },
              { const: "value3", title: "Third Option" },
            ],
          },
          legacyEnum: { type: "string", enum: ["opt1", "opt2", "opt3"], enumNames: ["Option One", "Option Two", "Option Three"] },
          untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
          titledMulti: {
            type: "array",
            items: {
              anyOf: [
                { const: "value1", title: "First Choice" },
                { const: "value2", title: "Second Choice" },
                { const: "value3", title: "Third Choice" },
              ],
            },
          },
        },
      }),
  },
  json_schema_2020_12_tool: {
    description: "takes arguments described with JSON Schema 2020-12 keywords",
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: { address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
      properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
      additionalProperties: false,
    },
    run: async (args) => ({ content: [text("received " + JSON.stringify(args))] }),
  },
  test_reconnection: {
    description: "closes its event stream before it answers, so that the client resumes it (SEP-1699)",
    inputSchema: noArgs,
    run: async (_args, ctx) => {
      // Only a client that can resume (protocol 2025-11-25, with the event store) is
      // given closeSSEStream by the SDK; an older one gets the answer on the stream.
      if (ctx.closeSSEStream) {
        ctx.closeSSEStream();
        await sleep(200);
      }
      return { content: [text("reconnection test done")] };
    },
  },
};

// elicit asks the client for input matching schema and reports its answer.
async function elicit(ctx, message, requestedSchema, label = "Elicitation completed") {
  const r = await ctx.request({ method: "elicitation/create", params: { message, requestedSchema } }, ElicitResultSchema);
  return { content: [text(`${label}: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`)] };
}

// The resources: the direct ones, and one template.
const resources = {
  "test://static-text": { name: "static-text", description: "a fixed text", mimeType: "text/plain", text: "This is the content of the static text resource." },
  "test://static-binary": { name: "static-binary", description: "a fixed PNG image", mimeType: "image/png", blob: PNG },
  "test://watched-resource": { name: "watched-resource", description: "a resource to subscribe to", mimeType: "text/plain", text: "watched" },
};
const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/;

// The prompts, by name.
const prompts = {
  test_simple_prompt: {
    description: "a prompt without arguments",
    arguments: [],
    get: () => [{ role: "user", content: text("This is a simple prompt for testing.") }],
  },
  test_prompt_with_arguments: {
    description: "a prompt with two arguments",
    arguments: [
      { name: "arg1", description: "the first argument", required: true },
      { name: "arg2", description: "the second argument", required: true },
    ],
    get: (a) => [{ role: "user", content: text(`Prompt with arguments: arg1='${a.arg1 ?? ""}', arg2='${a.arg2 ?? ""}'`) }],
  },
  test_prompt_with_embedded_resource: {
    description: "a prompt embedding the resource it is given",
    arguments: [{ name: "resourceUri", description: "the URI of the resource to embed", required: true }],
    get: (a) => [
      { role: "user", content: { type: "resource", resource: { uri: a.resourceUri ?? "", mimeType: "text/plain", text: "Embedded resource content for testing." } } },
      { role: "user", content: text("Please process the embedded resource above.") },
    ],
  },
  test_prompt_with_image: {
    description: "a prompt with an image",
    arguments: [],
    get: () => [
      { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
      { role: "user", content: text("Please analyze the image above.") },
    ],
  },
};

// The values completion/complete draws from, by prompt and argument.
const completions = {
  test_prompt_with_arguments: {
    arg1: ["paris", "park", "party", "test", "testing", "tester"],
    arg2: ["red", "green", "blue"],
  },
};

// newServer is the MCP server of one session.
function newServer() {
  const server = new Server(
    { name: "dialogtrust-interop-everything-server", version: "1.0.0" },
    { capabilities: { tools: {}, resources: { subscribe: true }, prompts: {}, logging: {}, completions: {} } },
  );
  const subscriptions = new Set();

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: Object.entries(tools).map(([name, t]) => ({ name, description: t.description, inputSchema: t.inputSchema })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = tools[request.params.name];
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${request.params.name}`);
    const progressToken = request.params._meta?.progressToken;
    // What a tool may do besides answering, all in the call's own event stream.
    const ctx = {
      log: async (level, data) => {
        if (!server.isMessageIgnored(level, extra.sessionId)) {
          await extra.sendNotification({ method: "notifications/message", params: { level, logger: "everything-server", data } });
        }
      },
      progress: async (progress, total) => {
        if (progressToken !== undefined) {
          await extra.sendNotification({ method: "notifications/progress", params: { progressToken, progress, total } });
        }
      },
      request: (req, schema) => extra.sendRequest(req, schema),
      closeSSEStream: extra.closeSSEStream,
    };
    return tool.run(request.params.arguments ?? {}, ctx);
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: Object.entries(resources).map(([uri, r]) => ({ uri, name: r.name, description: r.description, mimeType: r.mimeType })),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      { uriTemplate: "test://template/{id}/data", name: "template-data", description: "the data of an id", mimeType: "application/json" },
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    const r = resources[uri];
    if (r) {
      return { contents: [r.blob ? { uri, mimeType: r.mimeType, blob: r.blob } : { uri, mimeType: r.mimeType, text: r.text }] };
    }
    const m = TEMPLATE.exec(uri);
    if (m) {
      const id = decodeURIComponent(m[1]);
      return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }] };
    }
    throw new McpError(ErrorCode.InvalidParams, `no resource ${uri}`);
  });
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    subscriptions.add(request.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({
    prompts: Object.entries(prompts).map(([name, p]) => ({ name, description: p.description, arguments: p.arguments })),
  }));
  server.setRequestHandler(GetPromptRequestSchema, async (request) => {
    const p = prompts[request.params.name];
    if (!p) throw new McpError(ErrorCode.InvalidParams, `unknown prompt ${request.params.name}`);
    for (const a of p.arguments) {
      if (a.required && request.params.arguments?.[a.name] === undefined) {
        throw new McpError(ErrorCode.InvalidParams, `prompt ${request.params.name} needs argument ${a.name}`);
      }
    }
    return { description: p.description, messages: p.get(request.params.arguments ?? {}) };
  });

  server.setRequestHandler(CompleteRequestSchema, async (request) => {
    const { ref, argument } = request.params;
    const pool = ref.type === "ref/prompt" ? (completions[ref.name]?.[argument.name] ?? []) : [];
    const values = pool.filter((v) => v.startsWith(argument.value));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return server;
}

// eventStore keeps every event of the server's streams in memory, so that a client
// can resume a stream after the last event it got (Last-Event-ID). An event's id is
// its stream's id, a slash, and its sequence number.
function newEventStore() {
  const events = []; // {id, streamId, message}, in order
  let seq = 0;
  return {
    async storeEvent(streamId, message) {
      const id = `${streamId}/${++seq}`;
      events.push({ id, streamId, message });
      return id;
    },
    async getStreamIdForEventId(eventId) {
      return events.find((e) => e.id === eventId)?.streamId;
    },
    async replayEventsAfter(lastEventId, { send }) {
      const at = events.findIndex((e) => e.id === lastEventId);
      if (at < 0) throw new Error(`unknown event ${lastEventId}`);
      const streamId = events[at].streamId;
      for (const e of events.slice(at + 1)) {
        // The priming events ({}) carry no message.
        if (e.streamId === streamId && Object.keys(e.message).length > 0) await send(e.id, e.message);
      }
      return streamId;
    },
  };
}

const transports = new Map(); // Mcp-Session-Id -> transport

const app = createMcpExpressApp({ host: "127.0.0.1" });

function jsonRpcError(res, status, message) {
  res.status(status).json({ jsonrpc: "2.0", error: { code: -32000, message }, id: null });
}

app.post("/mcp", async (req, res) => {
  const sessionId = req.headers["mcp-session-id"];
  let transport = sessionId === undefined ? undefined : transports.get(sessionId);
  if (sessionId !== undefined && !transport) return jsonRpcError(res, 404, "Session not found");
  if (!transport) {
    if (!isInitializeRequest(req.body)) return jsonRpcError(res, 400, "No session: the first request must be initialize");
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: newEventStore(),
      retryInterval: 1000,
      onsessioninitialized: (id) => {
        transports.set(id, transport);
        console.log("session opened " + id);
      },
      onsessionclosed: (id) => {
        transports.delete(id);
        console.log("session closed " + id);
      },
    });
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
});

// GET opens (or resumes, with Last-Event-ID) the session's server-to-client stream;
// DELETE ends the session.
for (const method of ["get", "delete"]) {
  app[method]("/mcp", async (req, res) => {
    const transport = transports.get(req.headers["mcp-session-id"]);
    if (!transport) return jsonRpcError(res, req.headers["mcp-session-id"] === undefined ? 400 : 404, "Session not found");
    await transport.handleRequest(req, res);
  });
}

const listener = app.listen(port, "127.0.0.1", () => {
  console.log(`listening http://127.0.0.1:${port}/mcp`);
});
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => {
    for (const t of transports.values()) t.close().catch(() => {});
    listener.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  });
}
