"""A tool behind the dialogtrust ingress: Starlette on uvicorn.

    python3 tool.py [HOST:PORT]        (default 127.0.0.1:8801)

The ingress in front of it verified each request before forwarding it: the sender's
WIT and proof, the Txn-Token, the dialog. The tool learns what was verified from the
Dialogtrust-Verified-* fields the ingress set (docs/proxy.md, "The fields the
application sees at the ingress"); no credential reaches it. It answers every request
with what it saw, as JSON, and prints one line per request with the verified sender.

Needs Starlette and uvicorn (Debian: python3-starlette python3-uvicorn).
"""
import json
import socket
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

# The credentials the ingress verified and removed: the tool reports any that reached it.
CREDENTIALS = ("txn-token", "signature", "signature-input", "workload-identity-token")


async def invoke(request):
    h = request.headers
    claims = h.get("dialogtrust-verified-txn-token-claims")
    seen = {
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
        "credentials_seen": [f for f in CREDENTIALS if f in h],
    }
    print(f"tool: {request.method} {seen['path']} from the verified sender {seen['sender']} "
          f"(dialog {seen['dialog']})", flush=True)
    return JSONResponse(seen)


app = Starlette(routes=[Route("/{path:path}", invoke, methods=["GET", "POST"])])


def main():
    host, _, port = (sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:8801").rpartition(":")
    # The socket is bound and listening before the line below is printed, so whoever
    # waits for that line can call at once (uvicorn binds only after its startup).
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), int(port)))
    sock.listen(128)
    print(f"tool listening on http://{host}:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
