// An A2A 1.0 client built on the A2A JavaScript SDK (@a2a-js/sdk, its JSON-RPC
// transport): the delegating agent in the proxies' streaming interop test. It sends
// one SendStreamingMessage (sendMessageStream) in plain HTTP to its `dialogtrust proxy`
// egress, in a dialog the egress starts (Dialogtrust-Start-Dialog: ?1, as a service
// parameter; no handoff offer: nothing needs the reply whole), to
// proxy-a2a-stream-server.mjs, and reports each event of the stream as it arrives
// (lib.mjs report): "event {kind, state, text, metadata}" (kind: the SDK's payload case,
// task or statusUpdate or another; state: the SDK's TaskState number), then
// "done {contentType}" (that of the response) when the stream has ended.
//
// On an error it prints "error JSON" and exits 1.
//
// Usage: node proxy-a2a-stream-client.mjs URL GATE (GATE is the message's text).
import { Role } from "@a2a-js/sdk";
import { a2aClient, agentCard, report, textMessage, textsOf } from "./lib.mjs";

const [url, gate] = process.argv.slice(2);
if (!url || !gate) {
  console.error("usage: node proxy-a2a-stream-client.mjs URL GATE");
  process.exit(2);
}

let contentType = null;
async function keepingContentType(input, init) {
  const res = await fetch(input, init);
  contentType = res.headers.get("content-type");
  return res;
}

try {
  const client = await a2aClient(agentCard(url, "dialogtrust interop hotel (through the egress)", "", false, true), keepingContentType);
  const params = {
    tenant: "",
    message: textMessage({ messageId: "js-stream-" + process.pid, contextId: "", taskId: "", role: Role.ROLE_USER, text: gate, metadata: undefined }),
    configuration: undefined,
    metadata: undefined,
  };
  for await (const ev of client.sendMessageStream(params, { serviceParameters: { "Dialogtrust-Start-Dialog": "?1" } })) {
    const kind = ev.payload?.$case ?? "unknown";
    const status = ev.payload?.value?.status;
    report("event", {
      kind,
      state: status?.state ?? null,
      text: status?.message ? textsOf(status.message) : [],
      metadata: status?.message?.metadata ?? null,
    });
  }
  report("done", { contentType });
} catch (e) {
  console.log("error " + JSON.stringify({ name: e?.constructor?.name, message: String(e?.message ?? e), code: e?.code, data: e?.data }));
  process.exit(1);
}
