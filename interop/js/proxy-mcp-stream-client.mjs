// An MCP client built on the official TypeScript MCP SDK (@modelcontextprotocol/sdk,
// its Streamable HTTP client transport): the delegating agent in the proxies'
// streaming interop test, speaking plain HTTP to its `dialogtrust proxy` egress in a
// dialog the egress starts. It calls the tool slow_book of proxy-mcp-stream-server.mjs
// with a progress callback and reports, one line each as it happens (lib.mjs report):
//
//   - "get-open {status, contentType}" when the response to the SDK's GET (the
//     session's standalone stream, opened after initialization) arrives;
//   - "progress {progress, message}" and "log {data}" for the notifications of the call;
//   - "result {result, contentType, fields, dialogContext}" when the call returns
//     (contentType and fields: the Content-Type and Dialogtrust-* fields of the
//     response to the tools/call POST);
//   - "standalone {data}" for the logging message "standalone", which the server sends
//     with no request in flight, after which it closes and reports "done".
//
// With DIALOGTRUST_HANDOFF=1 the tools/call carries Dialogtrust-Handoff: ?1 (the egress
// makes a signed offer), and after the result it closes and reports "done" without
// waiting for a standalone message. An offer a fresh ingress rejects as a replay
// (see runJSHandoff in proxyjs_test.go) is made again, in a new session and dialog,
// for up to 5 s, reporting "retry": only the last call's result is reported.
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

const handoff = process.env.DIALOGTRUST_HANDOFF === "1";
const deadline = Date.now() + 5000;

function isCall(body) {
  try {
    return typeof body === "string" && JSON.parse(body)?.method === "tools/call";
  } catch {
    return false;
  }
}

// call runs one session: a dialog, a client, the call; retry says the call is to be
// made again. A call rejected as a replay before the deadline reports nothing: the
// ingress answers it without the tool, so there are no notifications, and its result
// is not reported. Nor is the GET in handoff mode, where the route asks for signed
// responses and the GET stream, held to be signed, never arrives.
async function call() {
  const dlg = egressDialog();
  let callContentType = null;
  let callFields = null;
  async function viaEgress(input, init = {}) {
    const headers = new Headers(init.headers);
    dlg.ask(headers);
    const calling = isCall(init.body);
    if (calling && handoff) headers.set("Dialogtrust-Handoff", "?1");
    const res = await fetch(input, { ...init, headers });
    dlg.learn(res);
    const contentType = res.headers.get("content-type");
    if ((init.method ?? "GET") === "GET" && !handoff) report("get-open", { status: res.status, contentType });
    if (calling) {
      callContentType = contentType;
      callFields = {};
      for (const [name, value] of res.headers) if (name.startsWith("dialogtrust-")) callFields[name] = value;
    }
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
  await client.connect(transport);
  const result = await client.callTool({ name: "slow_book", arguments: { gate } }, undefined, {
    onprogress: (p) => report("progress", { progress: p.progress, message: p.message ?? null }),
  });
  const replay = callFields?.["dialogtrust-handoff-status"] === "rejected" && callFields?.["dialogtrust-handoff-reason"] === "replay";
  const retry = replay && Date.now() < deadline;
  if (!retry) report("result", { result, contentType: callContentType, fields: callFields, dialogContext: dlg.value });
  return { client, retry, standaloneSeen };
}

try {
  for (;;) {
    const { client, retry, standaloneSeen } = await call();
    if (retry) {
      report("retry");
      await client.close();
      continue;
    }
    if (!handoff) await standaloneSeen;
    await client.close();
    report("done");
    break;
  }
} catch (e) {
  console.log("error " + JSON.stringify({ name: e?.constructor?.name, message: String(e?.message ?? e), code: e?.code }));
  process.exit(1);
}
