// An MCP client built on the official TypeScript MCP SDK (@modelcontextprotocol/sdk,
// its Streamable HTTP client transport): the delegating agent in the proxies'
// streaming interop test, speaking plain HTTP to its `dialogtrust proxy` egress in a
// dialog the egress starts (no handoff offer: nothing needs the reply whole). It calls
// the tool slow_book of proxy-mcp-stream-server.mjs with a progress callback and
// reports, one line each as it happens (lib.mjs report):
//
//   - "get-open {status, contentType}" when the response to the SDK's GET (the
//     session's standalone stream, opened after initialization) arrives;
//   - "progress {progress, message}" and "log {data}" for the notifications of the call;
//   - "result {result, contentType}" when the call returns (contentType: that of the
//     response to the tools/call POST);
//   - "standalone {data}" for the logging message "standalone", which the server sends
//     with no request in flight, after which it closes and reports "done".
//
// On an error it prints "error JSON" and exits 1.
//
// Usage: node proxy-mcp-stream-client.mjs URL GATE.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { egressDialog, report } from "./lib.mjs";

const [url, gate] = process.argv.slice(2);
if (!url || !gate) {
  console.error("usage: node proxy-mcp-stream-client.mjs URL GATE");
  process.exit(2);
}

const dlg = egressDialog();
let callContentType = null;

function isCall(body) {
  try {
    return typeof body === "string" && JSON.parse(body)?.method === "tools/call";
  } catch {
    return false;
  }
}

async function viaEgress(input, init = {}) {
  const headers = new Headers(init.headers);
  dlg.ask(headers);
  const res = await fetch(input, { ...init, headers });
  dlg.learn(res);
  const contentType = res.headers.get("content-type");
  if ((init.method ?? "GET") === "GET") report("get-open", { status: res.status, contentType });
  if (isCall(init.body)) callContentType = contentType;
  return res;
}

let standalone;
const standaloneSeen = new Promise((resolve) => (standalone = resolve));

const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: viaEgress });
const client = new Client({ name: "dialogtrust-interop-planner-stream", version: "1.0.0" });
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  if (n.params.data === "standalone") {
    report("standalone", { data: n.params.data });
    standalone();
  } else {
    report("log", { data: n.params.data });
  }
});
try {
  await client.connect(transport);
  const result = await client.callTool({ name: "slow_book", arguments: { gate } }, undefined, {
    onprogress: (p) => report("progress", { progress: p.progress, message: p.message ?? null }),
  });
  report("result", { result, contentType: callContentType, dialogContext: dlg.value });
  await standaloneSeen;
  await client.close();
  report("done");
} catch (e) {
  console.log("error " + JSON.stringify({ name: e?.constructor?.name, message: String(e?.message ?? e), code: e?.code }));
  process.exit(1);
}
