// An MCP client built on the official TypeScript MCP SDK (@modelcontextprotocol/sdk,
// its Streamable HTTP client transport): the delegating agent in the proxy interop
// test. It speaks plain HTTP to its `dialogtrust proxy` egress, which does the WIMSE
// work, and asks it through request fields of the egress's own:
//
//   - the first request (initialize) carries Dialogtrust-Start-Dialog: ?1, and every
//     later one the Dialog-Context the egress answered with;
//   - the tools/call carries Dialogtrust-Handoff: ?1 (the egress makes a signed offer
//     and puts it in the request's params._meta) and Dialogtrust-Handoff-Task.
//
// The fields are set by a fetch passed to the transport, which also keeps the
// response fields of the tools/call (Dialogtrust-Handoff-Status and the others the
// egress verified, and its Content-Type). Prints one line "result JSON" ({result, fields, dialogContext}:
// the CallToolResult as the SDK parsed it and those response fields) or "error JSON";
// exits 1 on an error.
//
// Usage: node proxy-mcp-client.mjs URL TOOL_ARGUMENTS_JSON, with the task text in
// DIALOGTRUST_HANDOFF_TASK (optional) and the tool to call in DIALOGTRUST_TOOL (default
// book_hotel); with DIALOGTRUST_HANDOFF=0 the call carries no handoff.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { egressDialog } from "./lib.mjs";

const [url, argsJSON] = process.argv.slice(2);
if (!url || !argsJSON) {
  console.error("usage: node proxy-mcp-client.mjs URL TOOL_ARGUMENTS_JSON");
  process.exit(2);
}
const toolArguments = JSON.parse(argsJSON);
const task = process.env.DIALOGTRUST_HANDOFF_TASK ?? "";
const tool = process.env.DIALOGTRUST_TOOL ?? "book_hotel";
const offer = process.env.DIALOGTRUST_HANDOFF !== "0";

const dlg = egressDialog();
let callFields = null;
const exchanges = [];

// methodsOf names the JSON-RPC methods in a request body (a message or a batch).
function methodsOf(body) {
  if (typeof body !== "string") return [];
  try {
    const msg = JSON.parse(body);
    return (Array.isArray(msg) ? msg : [msg]).map((m) => m?.method).filter(Boolean);
  } catch {
    return [];
  }
}

async function viaEgress(input, init = {}) {
  const headers = new Headers(init.headers);
  const methods = methodsOf(init.body);
  dlg.ask(headers);
  const isCall = methods.includes("tools/call");
  if (isCall && offer) {
    headers.set("Dialogtrust-Handoff", "?1");
    if (task !== "") headers.set("Dialogtrust-Handoff-Task", task);
  }
  const res = await fetch(input, { ...init, headers });
  exchanges.push({ method: init.method ?? "GET", rpc: methods, status: res.status });
  dlg.learn(res);
  if (isCall) {
    callFields = {};
    for (const [name, value] of res.headers) {
      if (name.startsWith("dialogtrust-") || name === "dialog-context" || name === "content-type") callFields[name] = value;
    }
  }
  return res;
}

const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: viaEgress });
const client = new Client({ name: "dialogtrust-interop-planner", version: "1.0.0" });
try {
  await client.connect(transport);
  const result = await client.callTool({ name: tool, arguments: toolArguments });
  console.log("result " + JSON.stringify({ result, fields: callFields, dialogContext: dlg.value, exchanges }));
  await client.close();
} catch (e) {
  console.log("error " + JSON.stringify({ name: e?.constructor?.name, message: String(e?.message ?? e), code: e?.code, data: e?.data, fields: callFields, exchanges }));
  process.exit(1);
}
