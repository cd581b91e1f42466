// A tool behind the dialogtrust ingress, on node's own http server.
//
//     node tool.ts [HOST:PORT]        (default 127.0.0.1:8801; node 22.18 or later)
//
// The ingress in front of it verified each request before forwarding it: the sender's
// WIT and proof, the Txn-Token, the dialog. The tool learns what was verified from the
// Dialogtrust-Verified-* fields the ingress set (docs/proxy.md, "The fields the
// application sees at the ingress"); no credential reaches it. It answers every request
// with what it saw, as JSON, and prints one line per request with the verified sender.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";

// The credentials the ingress verified and removed: the tool reports any that reached it.
const CREDENTIALS = ["txn-token", "signature", "signature-input", "workload-identity-token"];

interface Seen {
  sender: string | null;
  senders: string[];
  proof: string | null;
  dialog: string | null;
  initiator: string | null;
  initiator_proved: string | null;
  established: string | null;
  claims: Record<string, unknown> | null;
  path: string;
  body: string;
  credentials_seen: string[];
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function invoke(req: IncomingMessage, res: ServerResponse): Promise<void> {
  // Node joins repeated fields with ", "; headersDistinct keeps each value.
  const one = (name: string): string | null => req.headersDistinct[name]?.[0] ?? null;
  const claims = one("dialogtrust-verified-txn-token-claims");
  const seen: Seen = {
    sender: one("dialogtrust-verified-sender"),
    senders: req.headersDistinct["dialogtrust-verified-sender"] ?? [],
    proof: one("dialogtrust-verified-proof"),
    dialog: one("dialogtrust-verified-dialog"),
    initiator: one("dialogtrust-verified-initiator"),
    initiator_proved: one("dialogtrust-verified-initiator-proved"),
    established: one("dialogtrust-verified-established"),
    claims: claims ? JSON.parse(claims) : null,
    path: new URL(req.url ?? "/", "http://tool").pathname,
    body: await readBody(req),
    credentials_seen: CREDENTIALS.filter((f) => f in req.headers),
  };
  console.log(`tool: ${req.method} ${seen.path} from the verified sender ${seen.sender} (dialog ${seen.dialog})`);
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(seen));
}

const listen = process.argv[2] ?? "127.0.0.1:8801";
const colon = listen.lastIndexOf(":");
const host = listen.slice(0, colon).replace(/^\[|\]$/g, "");
const server = createServer((req, res) => {
  invoke(req, res).catch((err: unknown) => {
    res.writeHead(500, { "content-type": "text/plain" });
    res.end(String(err));
  });
});
server.listen(Number(listen.slice(colon + 1)), host, () => {
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  console.log(`tool listening on http://${listen.slice(0, colon)}:${port}`);
});
process.on("SIGINT", () => server.close(() => process.exit(0)));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
