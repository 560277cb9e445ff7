"""moto's S3 server with its writes made atomic: `moto_atomic.py HOST PORT`.

moto checks `If-None-Match: *` and then stores the object, in a threaded
server and without a lock, so two concurrent creates of one key can both
succeed — a lost Delta commit (the multi-server test saw an acknowledged
MERGE vanish). AWS S3 and MinIO make the check and the write one step; a
lock around every write request does the same here. Reads stay concurrent.
Logs "Running on" like moto_server once it accepts."""

import sys
import threading

from werkzeug.serving import run_simple

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)

app = DomainDispatcherApplication(create_backend_app)
writes = threading.Lock()


def serialized_writes(environ, start_response):
    if environ.get("REQUEST_METHOD") in ("PUT", "POST", "DELETE"):
        with writes:
            # Consume the response inside the lock: moto may do the work lazily.
            return list(app(environ, start_response))
    return app(environ, start_response)


run_simple(
    sys.argv[1],
    int(sys.argv[2]),
    serialized_writes,
    threaded=True,
    request_handler=MotoRequestHandler,
)
