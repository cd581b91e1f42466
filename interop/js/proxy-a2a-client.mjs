// An A2A 1.0 client built on the A2A JavaScript SDK (@a2a-js/sdk, its JSON-RPC
// transport): the delegating agent in the proxy interop test. It sends one
// SendMessage in plain HTTP to its `dialogtrust proxy` egress, which does the WIMSE
// work, asking it through request fields of the egress's own (sent as the SDK's
// service parameters): Dialogtrust-Start-Dialog: ?1, Dialogtrust-Handoff: ?1 (the
// egress makes a signed offer and puts it in the message's metadata under the
// agent-handoff extension URI) and Dialogtrust-Handoff-Task. A fetch passed to the
// SDK's transport keeps the response fields (Dialogtrust-Handoff-Status and the others
// the egress verified).
//
// Usage: node proxy-a2a-client.mjs URL [TEXT] (the message's text, default "book a
// hotel in Lisbon"), with the task text in DIALOGTRUST_HANDOFF_TASK
// (optional); with DIALOGTRUST_HANDOFF=0 it asks for no offer; with DIALOGTRUST_SKILL
// the message asks for that skill (metadata.skill, the member the ingress's allow
// rules read as `name`); with DIALOGTRUST_A2A_STREAM=1 it sends a SendStreamingMessage instead,
// whose reply is an event stream, and the result is its last Task or status update.
// Prints one line "result JSON" ({result, status, fields}: the SendMessage
// result as the SDK parsed it, the signed status text in it, the response fields) or
// "error JSON"; exits 1 on an error.
import { Role } from "@a2a-js/sdk";
import { EXTENSION_URI, a2aClient, agentCard } from "./lib.mjs";

const [url, text = "book a hotel in Lisbon"] = process.argv.slice(2);
if (!url) {
  console.error("usage: node proxy-a2a-client.mjs URL [TEXT]");
  process.exit(2);
}
const task = process.env.DIALOGTRUST_HANDOFF_TASK ?? "";
const streaming = process.env.DIALOGTRUST_A2A_STREAM === "1";
const offer = process.env.DIALOGTRUST_HANDOFF !== "0";
const skill = process.env.DIALOGTRUST_SKILL ?? "";

const card = agentCard(url, "dialogtrust interop hotel (through the egress)", "", false, streaming);

let fields = null;
async function keepingFields(input, init) {
  const res = await fetch(input, init);
  fields = {};
  for (const [name, value] of res.headers) {
    if (name.startsWith("dialogtrust-") || name === "dialog-context" || name === "a2a-extensions" || name === "content-type") fields[name] = value;
  }
  return res;
}

const params = {
  tenant: "",
  message: {
    messageId: "js-proxy-" + process.pid,
    contextId: "",
    taskId: "",
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: skill !== "" ? { skill } : undefined,
    // A2A 1.0: a Message lists the URIs of the extensions present in it; the egress
    // puts the offer under this one.
    extensions: [EXTENSION_URI],
    referenceTaskIds: [],
  },
  configuration: undefined,
  metadata: undefined,
};

const serviceParameters = {
  "A2A-Extensions": EXTENSION_URI,
  "Dialogtrust-Start-Dialog": "?1",
};
if (offer) serviceParameters["Dialogtrust-Handoff"] = "?1";
if (task !== "") serviceParameters["Dialogtrust-Handoff-Task"] = task;

try {
  const client = await a2aClient(card, keepingFields);
  let result;
  if (streaming) {
    for await (const ev of client.sendMessageStream(params, { serviceParameters })) {
      if (ev.payload?.$case === "task" || ev.payload?.$case === "statusUpdate") result = ev.payload.value;
    }
  } else {
    result = await client.sendMessage(params, { serviceParameters });
  }
  // A SendMessage result is a Message or a Task; the status rides in the Message's
  // metadata or the Task's status message's.
  const msg = result.messageId !== undefined ? result : result.status?.message;
  const status = msg?.metadata?.[EXTENSION_URI] ?? null;
  console.log("result " + JSON.stringify({ result, status, fields }));
} catch (e) {
  console.log("error " + JSON.stringify({ name: e?.constructor?.name, message: String(e?.message ?? e), code: e?.code, data: e?.data, fields }));
  process.exit(1);
}
