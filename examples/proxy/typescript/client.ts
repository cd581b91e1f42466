// An agent that calls a tool through its dialogtrust egress, with node's own fetch.
//
//     node client.ts EGRESS_URL [ROUTE] [--json]      (ROUTE default /t1; node 22.18 or later)
//
// It speaks plain HTTP to the egress, which signs each request as the agent's workload,
// adds its WIT and a Txn-Token for the dialog, and sends it to the tool's ingress. It
// starts a dialog, continues it with the Dialog-Context it got back, claims to be someone
// else in a Dialogtrust-Verified-Sender field of its own (the egress removes it), and
// calls a path with no route (the egress refuses it). It prints what the tool saw, one
// line a step, or with --json everything as one JSON document. It exits 1 when the tool
// saw no verified sender.

interface Seen {
  sender: string | null;
  proof: string | null;
  dialog: string | null;
  established: string | null;
}

const args = process.argv.slice(2).filter((a) => a !== "--json");
const asJSON = process.argv.includes("--json");
if (args.length === 0) {
  console.error("usage: node client.ts EGRESS_URL [ROUTE] [--json]");
  process.exit(2);
}
const egress = args[0].replace(/\/+$/, "");
const route = args[1] ?? "/t1";

async function post(path: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  return fetch(egress + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
}

async function ok(res: Response): Promise<Seen> {
  if (!res.ok) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Seen;
}

const firstRes = await post(route + "/invoke", { task: "book a trip" }, { "Dialogtrust-Start-Dialog": "?1" });
const dc = firstRes.headers.get("dialog-context");
const first = await ok(firstRes);
if (!dc) throw new Error("the egress returned no Dialog-Context");
const second = await ok(await post(route + "/invoke", { task: "again" }, { "Dialog-Context": dc }));
const claimed = "wimse://attacker.example/admin";
const spoofed = await ok(await post(route + "/invoke", {}, { "Dialog-Context": dc, "Dialogtrust-Verified-Sender": claimed }));
const refusedRes = await post("/no-such-route", {}, {});
const refused = (await refusedRes.json()) as Record<string, unknown>;

if (asJSON) {
  console.log(JSON.stringify({ dialog_context: dc, first, second, spoofed, refused_status: refusedRes.status, refused }));
} else {
  console.log(`started a dialog: the tool saw the verified sender ${first.sender} (proof ${first.proof}, dialog ${first.dialog}, established ${first.established})`);
  console.log(`continued it: the tool saw the verified sender ${second.sender} (dialog ${second.dialog}, established ${second.established})`);
  console.log(`claimed to be ${claimed}: the tool saw the verified sender ${spoofed.sender}`);
  console.log(`a path with no route: ${refusedRes.status} ${refused.code}`);
}
if (![first, second, spoofed].every((s) => s.sender)) {
  console.error("the tool saw no verified sender");
  process.exit(1);
}
