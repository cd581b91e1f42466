// An A2A 1.0 client built on the A2A JavaScript SDK (@a2a-js/sdk, its JSON-RPC
// transport): the delegating side of the interop test. It sends one SendMessage whose
// message carries the handoff it is given (made and signed in Go) and prints what it
// parsed from the reply: the signed status under the agent-handoff extension URI in the
// reply Message's metadata (handoff-context section 6), or the error the SDK raised.
//
// Usage: node client.mjs URL PLACE, with the handoff's JSON form in DIALOGTRUST_HANDOFF
// and the dialog (the message's contextId) in DIALOGTRUST_DIALOG. PLACE is "message"
// (params.message.metadata, where A2A 1.0 carries it) or "params" (params.metadata,
// where it carries none). Prints one line "status TEXT" or "error JSON"; exits 1 on an
// error.
import { ClientFactory } from "@a2a-js/sdk/client";
import { Role } from "@a2a-js/sdk";
import { EXTENSION_URI, agentCard } from "./lib.mjs";

const [url, place] = process.argv.slice(2);
const handoff = JSON.parse(process.env.DIALOGTRUST_HANDOFF ?? "null");
const dialog = process.env.DIALOGTRUST_DIALOG ?? "";
if (!url || !["message", "params"].includes(place) || !handoff) {
  console.error("usage: DIALOGTRUST_HANDOFF=JSON DIALOGTRUST_DIALOG=DLG node client.mjs URL message|params");
  process.exit(2);
}

const card = agentCard(url, "dialogtrust interop delegate (Go)", "", false);

const carried = { [EXTENSION_URI]: handoff };
const params = {
  tenant: "",
  message: {
    messageId: "js-" + process.pid,
    contextId: dialog,
    taskId: "",
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: "book a hotel in Lisbon" }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: place === "message" ? carried : undefined,
    // A2A 1.0: a Message lists the URIs of the extensions present in it.
    extensions: [EXTENSION_URI],
    referenceTaskIds: [],
  },
  configuration: undefined,
  metadata: place === "params" ? carried : undefined,
};

try {
  const client = await new ClientFactory().createFromAgentCard(card);
  const result = await client.sendMessage(params, { serviceParameters: { "A2A-Extensions": EXTENSION_URI } });
  // A SendMessage result is a Message or a Task; the status rides in the Message's
  // metadata (or the Task's status message).
  const msg = result.messageId !== undefined ? result : result.status?.message;
  const status = msg?.metadata?.[EXTENSION_URI];
  if (typeof status !== "string") {
    console.log("error " + JSON.stringify({ message: "no status in the reply", reply: result }));
    process.exit(1);
  }
  console.log("status " + status);
} catch (e) {
  console.log("error " + JSON.stringify({ name: e?.constructor?.name, message: String(e?.message ?? e), code: e?.code, data: e?.data }));
  process.exit(1);
}
