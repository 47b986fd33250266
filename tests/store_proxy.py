"""A fault-injecting HTTP proxy on loopback, in front of a store emulator (moto, Azurite,
fake-gcs-server): clients talk to the proxy as if it were the store, and the proxy forwards each
request unchanged (Host header included, so signatures still match) unless a rule picks it.

A rule matches requests by method and a regular expression over the path and query, fires a
given number of times, and does one of:

* ``status``: answer with an error status without forwarding (503 SlowDown, 500, 429): the
  request was refused, nothing happened at the store;
* ``lost-reply``: forward (the store applies the request), then answer with an error status
  or reset the connection: the client cannot know the request was applied;
* ``reset``: forward, send the reply's headers and half its body, then reset the connection;
* ``short``: forward, send the reply's headers (the true Content-Length) and only part of the
  body, then close cleanly: a truncated body under a 200 status;
* ``lying-length``: forward, then send a 200 whose Content-Length and body are both cut short
  (a consistent but truncated reply: only a client that checks the length it asked for or the
  object's size can tell);
* ``ignore-range``: forward without the Range header, so the whole object comes back under a
  200 (gateways and caches that do not support ranged GETs do this);
* ``ignore-conditions``: forward without the If-None-Match / If-Match headers, as a store that
  does not implement conditional writes silently does (the PUT overwrites);
* ``delay``: wait, then forward;
* ``call``: run a function (e.g. replace the object between two ranged reads), then forward.

`page_size` shrinks the page of the list requests a store lets the proxy page, so a directory
of a few files is listed in many requests:

* S3: `max-keys` (pyarrow asks for 1000) is rewritten; moto checks no request signature;
* GCS: `maxResults` is added (pyarrow asks for none) to the listings of directories without
  subdirectories (snapshot/, tag/, manifest/, a bucket's directory); a directory with
  subdirectories is listed in one page: fake-gcs-server v1.56.1 pages it wrongly under the
  `includeTrailingDelimiter=true` pyarrow sends (the next pages repeat the placeholder objects
  of subdirectories, then one page token forever), so when the first page shows prefixes the
  proxy asks again without a page size;
* Azure: `maxresults` is added (pyarrow asks for none) to requests under a SAS (an `abfs://` URI
  from `AzureServer.uri`) only: a Shared Key signature (an account key, as
  `AzureServer.filesystem` gives) covers the query, and Azurite refuses the request it changed.

A request with `Expect: 100-continue` and no body gets no interim 100 (`handle_expect_100`).

`log` keeps (method, path?query, status) for every request, so a test can assert what was
(or was never) sent, e.g. that no DELETE reached a live file.
"""
from __future__ import annotations

import http.client
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

ACTIONS = ("status", "lost-reply", "reset", "short", "lying-length", "ignore-range", "ignore-conditions", "delay",
           "call")

S3_SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
                b'<Message>Please reduce your request rate.</Message></Error>')
S3_INTERNAL = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code>'
               b'<Message>We encountered an internal error. Please try again.</Message></Error>')


@dataclass
class Rule:
    action: str
    method: str | None = None          # None: any method
    pattern: str = ""                  # re.search over "path?query"
    times: int = 1                     # how many matching requests it fires on (-1: always)
    status: int = 503
    body: bytes = S3_SLOW_DOWN
    headers: dict = field(default_factory=dict)
    keep: float = 0.5                  # short / reset / lying-length: fraction of the body sent
    seconds: float = 0.0               # delay
    fn: Callable[[str, str], None] | None = None  # call: fn(method, target)
    skip: int = 0                      # let this many matching requests through first
    every: int = 1                     # fire on every `every`-th matching request only (a storm)
    fired: int = 0
    seen: int = 0

    def matches(self, method: str, target: str) -> bool:
        if self.method is not None and method != self.method:
            return False
        return re.search(self.pattern, target) is not None


_GCS_LIST = r"/storage/v1/b/[^/?]+/o\?"


def _with_param(target: str, name: str, value: int) -> str:
    if re.search(rf"[?&]{name}=", target):
        return re.sub(rf"([?&]{name}=)[^&]*", rf"\g<1>{value}", target)
    return f"{target}&{name}={value}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in separate writes: no 40 ms delayed-ACK stall
    server: "_Server"

    def log_message(self, *args):  # quiet
        pass

    def handle_expect_100(self) -> bool:
        """`Expect: 100-continue` on a request without a body (pyarrow's Azure client sends it on
        every PUT, a lease's too) gets no interim 100: the client has nothing to send, and the
        final reply would follow at once. azure-core's parser misreads a 100 and the reply after
        it arriving in one read (the reply's headers taken for its body), so an error reply then
        failed to parse ("Failed to parse xml"), and where pyarrow releases a lease, in a
        destructor, that ended the process."""
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked" and \
                not int(self.headers.get("Content-Length") or 0):
            return True
        return super().handle_expect_100()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _handle(self) -> None:
        proxy = self.server.proxy
        method, target = self.command, self.path
        body = self._body()
        asked = target
        if proxy.page_size and method == "GET":
            target = proxy.paged(target)
        rule = proxy.pick(method, target)
        if rule is not None and rule.action == "delay":
            time.sleep(rule.seconds)
        if rule is not None and rule.action == "call":
            rule.fn(method, target)
        if rule is not None and rule.action == "status":
            proxy.record(method, target, rule.status, "injected")
            self._reply(rule.status, {"Content-Type": "application/xml", **rule.headers}, rule.body)
            return
        action = rule.action if rule is not None else None
        sent = self.headers
        dropped = {"ignore-range": ("range",), "ignore-conditions": ("if-none-match", "if-match")}.get(action, ())
        if dropped:
            sent = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
        status, reason, headers, data = proxy.forward(method, target, sent, body)
        if target != asked and proxy.unpageable(target, data):
            target = asked
            status, reason, headers, data = proxy.forward(method, target, sent, body)
        proxy.record(method, target, status, action or "")
        if action == "lost-reply":
            if rule.status:
                self._reply(rule.status, {"Content-Type": "application/xml"}, rule.body)
            else:
                self._reset()
            return
        if action in ("reset", "short") and method != "HEAD" and data:
            cut = int(len(data) * rule.keep)
            self._reply(status, headers, data[:cut], content_length=len(data), reason=reason)
            if action == "reset":
                self._reset()
            else:
                self.close_connection = True
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_WR)
            return
        if action == "lying-length" and method != "HEAD" and data:
            data = data[:int(len(data) * rule.keep)]
        self._reply(status, headers, data, reason=reason, head=method == "HEAD")

    def _reply(self, status: int, headers: dict, data: bytes, content_length: int | None = None,
               reason: str | None = None, head: bool = False) -> None:
        self.send_response_only(status, reason)
        for k, v in headers.items():
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(k, v)
        if head and "content-length" in {k.lower() for k in headers}:
            self.send_header("Content-Length", next(v for k, v in headers.items() if k.lower() == "content-length"))
        else:
            self.send_header("Content-Length", str(len(data) if content_length is None else content_length))
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def _reset(self) -> None:
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    proxy: "StoreProxy"

    def handle_error(self, request, client_address):  # a client hanging up mid-reply is no news
        import sys
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class StoreProxy:
    """A proxy on 127.0.0.1 with a free port, forwarding to `upstream` ("host:port")."""

    def __init__(self, upstream: str):
        self.upstream_host, port = upstream.rsplit(":", 1)
        self.upstream_port = int(port)
        self.rules: list[Rule] = []
        self.page_size = 0  # > 0: list requests ask for at most this many keys (more pages)
        self.log: list[tuple[str, str, int, str]] = []
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.proxy = self
        self.port = self.server.server_address[1]
        self.authority = f"127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add(self, rule: Rule) -> Rule:
        with self.lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self.lock:
            self.rules.clear()
            self.log.clear()

    def paged(self, target: str) -> str:
        """`target`, when it is a list request the store lets the proxy page (module docstring),
        asking for at most `page_size` keys."""
        if "max-keys=" in target:  # S3 (pyarrow asks for 1000; moto checks no signature)
            return _with_param(target, "max-keys", self.page_size)
        if re.match(_GCS_LIST, target):  # GCS (pyarrow asks for no page size)
            return _with_param(target, "maxResults", self.page_size)
        if re.search(r"[?&]comp=list(&|$)", target) and re.search(r"[?&]sig=", target):  # Azure under a SAS
            return _with_param(target, "maxresults", self.page_size)
        return target

    @staticmethod
    def unpageable(target: str, data: bytes) -> bool:
        """Whether the first page of a paged GCS listing shows subdirectories: fake-gcs-server
        v1.56.1 pages those wrongly under pyarrow's `includeTrailingDelimiter=true` (the next
        pages repeat placeholder objects, then one page token forever)."""
        first = not re.search(r"[?&]pageToken=[^&]", target)
        return re.match(_GCS_LIST, target) is not None and first and b'"prefixes"' in data

    def pick(self, method: str, target: str) -> Rule | None:
        with self.lock:
            for rule in self.rules:
                if rule.matches(method, target):
                    rule.seen += 1
                    if rule.seen <= rule.skip or (rule.seen - rule.skip - 1) % rule.every:
                        continue
                    if rule.times < 0 or rule.fired < rule.times:
                        rule.fired += 1
                        return rule
        return None

    def record(self, method: str, target: str, status: int, action: str) -> None:
        with self.lock:
            self.log.append((method, target, status, action))

    def forward(self, method: str, target: str, headers, body: bytes):
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
        try:
            out = {k: v for k, v in headers.items() if k.lower() not in ("transfer-encoding", "content-length",
                                                                          "connection")}
            if body or method in ("PUT", "POST", "PATCH"):
                out["Content-Length"] = str(len(body))
            conn.request(method, target, body=body if body or method in ("PUT", "POST", "PATCH") else None,
                         headers=out)
            resp = conn.getresponse()
            data = resp.read()
            hdrs = {k: v for k, v in resp.getheaders()}
            return resp.status, resp.reason, hdrs, data
        finally:
            conn.close()

    def requests(self, method: str | None = None, pattern: str = "") -> list[tuple[str, str, int, str]]:
        with self.lock:
            return [r for r in self.log if (method is None or r[0] == method) and re.search(pattern, r[1])]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
