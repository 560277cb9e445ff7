"""An HTTP proxy in front of an S3 server that drops If-None-Match from
requests: a store that accepts conditional PUTs and ignores them, as some
S3-compatible stores do. Usage: ignore_if_none_match.py LISTEN_PORT S3_PORT.
Prints "listening" once it accepts connections."""

import http.client
import http.server
import sys

UPSTREAM_PORT = int(sys.argv[2])


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() != "if-none-match"}
        upstream = http.client.HTTPConnection("127.0.0.1", UPSTREAM_PORT)
        upstream.request(self.command, self.path, body=body, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        upstream.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Proxy)
print("listening", flush=True)
server.serve_forever()
