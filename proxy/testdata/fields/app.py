"""An application behind the dialogtrust ingress that reports every field it saw.

  app.py wsgi   Python's wsgiref (PEP 3333): the environ's HTTP_* variables, named
                as CGI names them (upper case, "-" as "_"), repeated fields and
                spellings joined with a comma as wsgiref joins them.
  app.py asgi   Starlette on uvicorn (ASGI): the scope's headers, each name and
                value as the server passed it, in order, repetitions included.

It answers every request with that one JSON document, and serves on the listening
socket it inherits as file descriptor 3, so that the test needs no wait or port.
"""
import json
import socket
import sys


def wsgi_app(environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length:
        environ["wsgi.input"].read(length)
    seen = {k: v for k, v in environ.items() if k.startswith("HTTP_")}
    body = json.dumps({"environ": seen}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def serve_wsgi():
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    sock = socket.socket(fileno=3)
    host, port = sock.getsockname()[:2]
    srv = WSGIServer((host, port), Quiet, bind_and_activate=False)
    srv.socket.close()
    srv.socket = sock
    srv.server_name, srv.server_port = host, port
    srv.setup_environ()
    srv.set_app(wsgi_app)
    srv.serve_forever()


def serve_asgi():
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def seen(request):
        await request.body()
        return JSONResponse({"headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in request.scope["headers"]]})

    app = Starlette(routes=[Route("/{path:path}", seen, methods=["GET", "POST"])])
    uvicorn.run(app, fd=3, log_level="warning")


if __name__ == "__main__":
    {"wsgi": serve_wsgi, "asgi": serve_asgi}[sys.argv[1]]()
