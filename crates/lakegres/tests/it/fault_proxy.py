"""An HTTP proxy in front of an S3 server that injects the faults of real
object stores, at random with a fixed seed (issue #26):

- `503`: answers 503 SlowDown without forwarding (throttling);
- `500`: answers 500 InternalError without forwarding;
- `reset_before`: closes the connection without forwarding;
- `reset_after`: forwards, then closes without answering: the request took
  effect and its response is lost — most often a conditional PUT, a commit
  whose writer must then recognise it as its own;
- `slow`: forwards, then answers after `--delay` seconds (past the client's
  timeout when that is shorter: the write took effect, the client gave up).

With `--ignore-if-none-match` it drops that header from every request: a
store that accepts conditional PUTs and ignores them, as some
S3-compatible stores do.

By rule, with `--lose-commit-every N`, every Nth conditional PUT while
faults are on has its response lost (`reset_after`), so that every run
proves the case however the random draws fall.

Usage: fault_proxy.py LISTEN_PORT S3_PORT [--seed N] [--rate R] [--delay S]
[--lose-commit-every N] [--ignore-if-none-match].
`R` is the share of requests given a fault (a conditional PUT: twice that,
as a lost commit response is the case to prove). `GET /__faults` answers
the faults injected so far as JSON, `POST /__faults?rate=R` changes the rate
(0 stops injecting). Prints "listening" once it accepts connections."""

import argparse
import http.client
import http.server
import json
import random
import threading
import time
import urllib.parse

parser = argparse.ArgumentParser()
parser.add_argument("listen", type=int)
parser.add_argument("upstream", type=int)
parser.add_argument("--seed", type=int, default=26)
parser.add_argument("--rate", type=float, default=0.05)
parser.add_argument("--delay", type=float, default=3.0)
parser.add_argument("--lose-commit-every", type=int, default=0)
parser.add_argument("--ignore-if-none-match", action="store_true")
args = parser.parse_args()

lock = threading.Lock()
rng = random.Random(args.seed)
rate = args.rate
conditional_puts = 0
counts = {"requests": 0, "503": 0, "500": 0, "reset_before": 0, "reset_after": 0, "slow": 0,
          "lost_commit": 0}
FAULTS = ["503", "500", "reset_before", "reset_after", "slow"]


def draw(conditional):
    """The fault for the next request, if any."""
    global conditional_puts
    with lock:
        counts["requests"] += 1
        if conditional and rate > 0 and args.lose_commit_every:
            conditional_puts += 1
            if conditional_puts % args.lose_commit_every == 0:
                counts["reset_after"] += 1
                counts["lost_commit"] += 1
                return "reset_after"
        share = min(1.0, rate * (2 if conditional else 1))
        if rng.random() >= share:
            return None
        fault = "reset_after" if conditional and rng.random() < 0.5 else rng.choice(FAULTS)
        counts[fault] += 1
        if conditional and fault in ("reset_after", "slow"):
            counts["lost_commit"] += 1
        return fault


ERROR = """<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>{code}</Code><Message>injected</Message><RequestId>fault</RequestId></Error>"""


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _control(self):
        global rate
        if self.command == "POST":
            query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
            with lock:
                rate = float(query.get("rate", [rate])[0])
        with lock:
            body = json.dumps(dict(counts, rate=rate)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _answer(self, status, code):
        body = ERROR.format(code=code).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _forward(self):
        if self.path.startswith("/__faults"):
            return self._control()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        conditional = self.command == "PUT" and "if-none-match" in {k.lower() for k in self.headers}
        fault = draw(conditional)
        if fault == "503":
            return self._answer(503, "SlowDown")
        if fault == "500":
            return self._answer(500, "InternalError")
        if fault == "reset_before":
            self.close_connection = True
            return
        headers = {k: v for k, v in self.headers.items()
                   if not (args.ignore_if_none_match and k.lower() == "if-none-match")}
        upstream = http.client.HTTPConnection("127.0.0.1", args.upstream)
        upstream.request(self.command, self.path, body=body, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        upstream.close()
        if fault == "reset_after":
            self.close_connection = True
            return
        if fault == "slow":
            time.sleep(args.delay)
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that gave up (its timeout) closed the connection


server = Server(("127.0.0.1", args.listen), Proxy)
print("listening", flush=True)
server.serve_forever()
