"""A moto S3 server on loopback for the object-store tests (moto[server] is a test extra).

moto evaluates `If-None-Match: *` with a lookup followed by a store, so two requests running
in different server threads could both pass the lookup; real S3 decides conditional writes
atomically. The server therefore handles one request at a time (a lock around the app),
which gives the atomicity S3 guarantees while clients still race with each other.
"""
from __future__ import annotations

import logging
import threading

import pyarrow.fs as pafs

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
               "AWS_EC2_METADATA_DISABLED": "true"}


class _OneRequestAtATime:
    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            return list(self.app(environ, start_response))


class S3Server:
    """moto's S3 on 127.0.0.1 with a free port; `endpoint` is its URL."""

    def __init__(self):
        from moto.moto_server.werkzeug_app import (DomainDispatcherApplication, MotoRequestHandler,
                                                   create_backend_app)
        from werkzeug.serving import make_server
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
        app = _OneRequestAtATime(DomainDispatcherApplication(create_backend_app))
        self.server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def filesystem(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(access_key="testing", secret_key="testing", region="us-east-1", scheme="http",
                                 endpoint_override=f"127.0.0.1:{self.port}", allow_bucket_creation=True)

    def create_bucket(self, name: str) -> None:
        self.filesystem().create_dir(name)

    def uri(self, path: str, credentials: bool = False) -> str:
        """An s3:// location on this server; with `credentials` they travel in the URI (for
        processes that may not have the AWS_* variables)."""
        user = "testing:testing@" if credentials else ""
        return f"s3://{user}{path}?endpoint_override=127.0.0.1:{self.port}&scheme=http&region=us-east-1"

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join()
