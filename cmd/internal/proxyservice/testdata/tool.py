"""An ASGI tool (Starlette on uvicorn) behind the dialogtrust ingress.

It answers every request with what it saw: the verified fields the ingress set,
the path and body, and whether any credential field reached it. It serves on the
listening socket it inherits as file descriptor 3, so the test needs no wait.
"""
import json

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route


async def invoke(request):
    h = request.headers
    claims = h.get("dialogtrust-verified-txn-token-claims")
    return JSONResponse({
        "sender": h.get("dialogtrust-verified-sender"),
        "senders": h.getlist("dialogtrust-verified-sender"),
        "proof": h.get("dialogtrust-verified-proof"),
        "dialog": h.get("dialogtrust-verified-dialog"),
        "initiator": h.get("dialogtrust-verified-initiator"),
        "initiator_proved": h.get("dialogtrust-verified-initiator-proved"),
        "established": h.get("dialogtrust-verified-established"),
        "claims": json.loads(claims) if claims else None,
        "path": request.url.path,
        "body": (await request.body()).decode(),
        "credentials_seen": [f for f in ("txn-token", "signature", "signature-input", "workload-identity-token") if f in h],
    })


app = Starlette(routes=[Route("/{path:path}", invoke, methods=["GET", "POST"])])

if __name__ == "__main__":
    uvicorn.run(app, fd=3, log_level="warning")
