// An MCP tool server built on the official TypeScript MCP SDK
// (@modelcontextprotocol/sdk, its Streamable HTTP server transport on node:http,
// stateless): the application behind a `dialogtrust proxy` ingress in the proxy
// interop test. At /mcp it answers in application/json (enableJsonResponse), at
// /mcp-sse in text/event-stream, the SDK's default. Its one tool, book_hotel, reads what the ingress verified
// (the Dialogtrust-Verified-* request fields), checks that a handoff was accepted for
// the expected sender in a dialog, and tells the ingress the outcome in the
// Dialogtrust-Handoff-Status response field (completed, or failed when a check does
// not hold), which the ingress turns into the signed status. It reports what it saw in
// the tool result and in a "seen JSON" line on stdout, one per call.
//
// Usage: node proxy-mcp-server.mjs PORT EXPECTED_SENDER. Prints "listening URL" (the
// /mcp one) once it accepts requests.
import http from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { CREDENTIAL_FIELDS, dialogtrustFields, handoffProblems, serverArgs } from "./lib.mjs";

const { port, expectedSender } = serverArgs("proxy-mcp-server.mjs", true);
const url = `http://127.0.0.1:${port}/mcp`;

// setOutcome tells the ingress the outcome, which depends only on the request's
// fields, and sets a field of the proxies' namespace that no proxy defines: the agent
// must never see it, since it trusts the Dialogtrust-* fields its egress answers with.
function setOutcome(res, problems) {
  res.setHeader("Dialogtrust-Handoff-Status", problems.length === 0 ? "completed" : "failed");
  res.setHeader("Dialogtrust-Interop-Forged", "set by the tool");
}

// newServer is one MCP server for one HTTP exchange (the SDK's stateless pattern), so
// the tool handler can reach that exchange's request and response. With an event
// stream (json false) the transport writes the response's head before the tool runs,
// so the outcome fields are set before the exchange is handed to it.
function newServer(req, res, json) {
  const server = new Server({ name: "dialogtrust-interop-hotel", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: "book_hotel",
        description: "books a hotel for the delegating agent",
        inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const fields = dialogtrustFields(req.headers);
    const problems = handoffProblems(fields, expectedSender);
    const seen = {
      tool: request.params.name,
      arguments: request.params.arguments ?? null,
      fields,
      // What the SDK itself exposes of the HTTP request agrees with the closure's.
      sdkSender: extra.requestInfo?.headers?.["dialogtrust-verified-sender"] ?? null,
      meta: request.params._meta ?? null,
      credentialsSeen: CREDENTIAL_FIELDS.filter((name) => name in req.headers),
      problems,
      eventStream: !json,
    };
    console.log("seen " + JSON.stringify(seen));
    const outcome = problems.length === 0 ? "completed" : "failed";
    // In JSON mode the exchange's response is not written yet: the transport writes it
    // after this handler returns, keeping the fields set here.
    if (json) setOutcome(res, problems);
    return {
      content: [{ type: "text", text: outcome === "completed" ? "booked in " + (request.params.arguments?.city ?? "?") : "not booked: " + problems.join(", ") }],
      structuredContent: { seen },
      isError: outcome !== "completed",
    };
  });
  return server;
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? undefined : JSON.parse(text);
}

const httpServer = http.createServer(async (req, res) => {
  const path = new URL(req.url, url).pathname;
  if (path !== "/mcp" && path !== "/mcp-sse") {
    res.writeHead(404).end();
    return;
  }
  const json = path === "/mcp";
  // Stateless: no session to stream to (GET) or end (DELETE), as in the SDK's own
  // stateless example (proxy-mcp-stream-server.mjs has sessions and their GET stream).
  if (req.method !== "POST") {
    res.writeHead(405, { allow: "POST", "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed." }, id: null }));
    return;
  }
  try {
    const body = await readBody(req);
    const server = newServer(req, res, json);
    const isCall = (Array.isArray(body) ? body : [body]).some((m) => m?.method === "tools/call");
    if (!json && isCall) setOutcome(res, handoffProblems(dialogtrustFields(req.headers), expectedSender));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  } catch (e) {
    console.error("request failed: " + (e?.stack ?? e));
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" }).end(String(e?.message ?? e));
  }
});
httpServer.listen(port, "127.0.0.1", () => console.log("listening " + url));
process.on("SIGTERM", () => httpServer.close(() => process.exit(0)));
