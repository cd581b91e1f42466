// An MCP tool server built on the official TypeScript MCP SDK
// (@modelcontextprotocol/sdk: McpServer and its Streamable HTTP server transport on
// node:http, stateful, answering in text/event-stream, the SDK's default): the
// application behind a `dialogtrust proxy` ingress in the proxies' streaming interop
// test. Its one tool, slow_book, is a long call: it sends a progress notification (to
// the progress token the client gave) and a logging message, then waits until the
// test releases its gate (POST /release/GATE, GATE the tool's "gate" argument), and
// only then returns its result, which names the sender and proof the ingress verified.
// A POST /notify sends a logging message with data "standalone" to every session, with
// no request in flight: it can only travel in the session's GET stream.
//
// On stdout: "listening URL" (the /mcp one) once it accepts requests, "waiting GATE"
// when the tool has sent its notifications and waits, "released GATE" when it goes on,
// "notified N" after a /notify was sent to N sessions.
//
// Usage: node proxy-mcp-stream-server.mjs PORT EXPECTED_SENDER.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { dialogtrustFields, gates, serverArgs } from "./lib.mjs";

const { port, expectedSender } = serverArgs("proxy-mcp-stream-server.mjs", true);
const url = `http://127.0.0.1:${port}/mcp`;
const released = gates();

// sessions maps a session id to its transport and server.
const sessions = new Map();

function newServer() {
  const server = new McpServer({ name: "dialogtrust-interop-hotel-stream", version: "1.0.0" }, { capabilities: { logging: {} } });
  server.registerTool(
    "slow_book",
    { description: "books a hotel, slowly, telling the client how far it got", inputSchema: { gate: z.string() } },
    async ({ gate }, extra) => {
      const fields = dialogtrustFields(extra.requestInfo?.headers);
      const progressToken = extra._meta?.progressToken;
      if (progressToken !== undefined) {
        await extra.sendNotification({ method: "notifications/progress", params: { progressToken, progress: 1, total: 2, message: "searching" } });
      }
      await extra.sendNotification({ method: "notifications/message", params: { level: "info", logger: "hotel", data: "searching " + gate } });
      console.log("waiting " + gate);
      await released.wait(gate);
      console.log("released " + gate);
      const sender = fields["dialogtrust-verified-sender"] ?? "";
      return {
        content: [{ type: "text", text: "booked " + gate }],
        structuredContent: { sender, proof: fields["dialogtrust-verified-proof"] ?? "", senderAsExpected: sender === expectedSender },
      };
    },
  );
  return server;
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? undefined : JSON.parse(text);
}

function jsonError(res, status, message) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

const httpServer = http.createServer(async (req, res) => {
  const path = new URL(req.url, url).pathname;
  try {
    const gate = released.releasePath(path);
    if (gate !== null && req.method === "POST") {
      released.release(gate);
      res.writeHead(204).end();
      return;
    }
    if (path === "/notify" && req.method === "POST") {
      let n = 0;
      for (const { server } of sessions.values()) {
        // A session whose client went away has no stream to send to.
        try {
          await server.server.sendLoggingMessage({ level: "info", logger: "hotel", data: "standalone" });
          n++;
        } catch (e) {
          console.error("notify: " + (e?.message ?? e));
        }
      }
      console.log("notified " + n);
      res.writeHead(204).end();
      return;
    }
    if (path !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    const body = req.method === "POST" ? await readBody(req) : undefined;
    const id = req.headers["mcp-session-id"];
    let session = typeof id === "string" ? sessions.get(id) : undefined;
    if (session === undefined) {
      if (req.method !== "POST" || id !== undefined || !isInitializeRequest(body)) {
        jsonError(res, 400, "Bad Request: no valid session");
        return;
      }
      // The SDK's stateful pattern: a transport and a server per session, kept from
      // the initialize on.
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, session),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      session = { transport, server: newServer() };
      await session.server.connect(transport);
    }
    await session.transport.handleRequest(req, res, body);
  } catch (e) {
    console.error("request failed: " + (e?.stack ?? e));
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" }).end(String(e?.message ?? e));
  }
});
httpServer.listen(port, "127.0.0.1", () => console.log("listening " + url));
process.on("SIGTERM", () => {
  httpServer.closeAllConnections();
  httpServer.close(() => process.exit(0));
});
