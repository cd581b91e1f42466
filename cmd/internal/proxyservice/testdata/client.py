"""An httpx client of the local dialogtrust egress.

It starts a dialog, continues it with the Dialog-Context it got back, and sends a
spoofed identity field; it prints what the tool answered as one JSON document.
"""
import json
import sys

import httpx

egress = sys.argv[1]
with httpx.Client(base_url=egress, timeout=20) as c:
    first = c.post("/t1/invoke", json={"task": "book a trip"}, headers={"Dialogtrust-Start-Dialog": "?1"})
    first.raise_for_status()
    dc = first.headers["dialog-context"]
    second = c.post("/t1/invoke", json={"task": "again"}, headers={"Dialog-Context": dc})
    second.raise_for_status()
    spoofed = c.post("/t1/invoke", json={}, headers={"Dialog-Context": dc, "Dialogtrust-Verified-Sender": "wimse://a.example/admin"})
    spoofed.raise_for_status()
    refused = c.post("/nowhere", json={})
    print(json.dumps({
        "dialog_context": dc,
        "first": first.json(),
        "second": second.json(),
        "spoofed": spoofed.json(),
        "refused_status": refused.status_code,
        "refused": refused.json(),
    }))
