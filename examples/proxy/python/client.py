"""An agent that calls a tool through its dialogtrust egress, with httpx.

    python3 client.py EGRESS_URL [ROUTE] [--json]      (ROUTE default /t1)

It speaks plain HTTP to the egress, which signs each request as the agent's workload,
adds its WIT and a Txn-Token for the dialog, and sends it to the tool's ingress. It
starts a dialog, continues it with the Dialog-Context it got back, claims to be someone
else in a Dialogtrust-Verified-Sender field of its own (the egress removes it), and
calls a path with no route (the egress refuses it). It prints what the tool saw, one
line a step, or with --json everything as one JSON document. It exits 1 when the tool
saw no verified sender.

Needs httpx (Debian: python3-httpx).
"""
import json
import sys

import httpx


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    if not args:
        sys.exit(__doc__)
    egress, route = args[0].rstrip("/"), (args[1] if len(args) > 1 else "/t1")
    with httpx.Client(base_url=egress, timeout=20) as c:
        first = c.post(route + "/invoke", json={"task": "book a trip"}, headers={"Dialogtrust-Start-Dialog": "?1"})
        first.raise_for_status()
        dc = first.headers["dialog-context"]
        second = c.post(route + "/invoke", json={"task": "again"}, headers={"Dialog-Context": dc})
        second.raise_for_status()
        claimed = "wimse://attacker.example/admin"
        spoofed = c.post(route + "/invoke", json={}, headers={"Dialog-Context": dc, "Dialogtrust-Verified-Sender": claimed})
        spoofed.raise_for_status()
        refused = c.post("/no-such-route", json={})
    result = {
        "dialog_context": dc,
        "first": first.json(),
        "second": second.json(),
        "spoofed": spoofed.json(),
        "refused_status": refused.status_code,
        "refused": refused.json(),
    }
    if "--json" in sys.argv[1:]:
        print(json.dumps(result))
    else:
        f, s, x = result["first"], result["second"], result["spoofed"]
        print(f"started a dialog: the tool saw the verified sender {f['sender']} "
              f"(proof {f['proof']}, dialog {f['dialog']}, established {f['established']})")
        print(f"continued it: the tool saw the verified sender {s['sender']} "
              f"(dialog {s['dialog']}, established {s['established']})")
        print(f"claimed to be {claimed}: the tool saw the verified sender {x['sender']}")
        print(f"a path with no route: {refused.status_code} {result['refused'].get('code')}")
    if not all(r["sender"] for r in (result["first"], result["second"], result["spoofed"])):
        sys.exit("the tool saw no verified sender")


if __name__ == "__main__":
    main()
