"""A moto S3 server on loopback for the object-store tests (moto[server] is a test extra).

moto evaluates `If-None-Match: *` with a lookup followed by a store, so two requests running
in different server threads could both pass the lookup; real S3 decides conditional writes
atomically. The server therefore handles one request at a time (a lock around the app),
which gives the atomicity S3 guarantees while clients still race with each other.
"""
from __future__ import annotations

import logging
import ssl
import subprocess
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
    """moto's S3 on 127.0.0.1 with a free port; `endpoint` is its URL. With `certificate` (a
    PEM certificate file and its key's, `self_signed_certificate`) it serves HTTPS."""

    def __init__(self, certificate: tuple[str, str] | None = None):
        from moto.moto_server.werkzeug_app import (DomainDispatcherApplication, MotoRequestHandler,
                                                   create_backend_app)
        from werkzeug.serving import make_server
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
        app = _OneRequestAtATime(DomainDispatcherApplication(create_backend_app))
        context = None
        if certificate is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*certificate)
        self.server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler,
                                  ssl_context=context)
        self.port = self.server.server_address[1]
        self.scheme = "http" if certificate is None else "https"
        self.ca_file = "" if certificate is None else certificate[0]
        self.endpoint = f"{self.scheme}://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def filesystem(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(access_key="testing", secret_key="testing", region="us-east-1", scheme=self.scheme,
                                 endpoint_override=f"127.0.0.1:{self.port}", allow_bucket_creation=True,
                                 tls_ca_file_path=self.ca_file)

    def create_bucket(self, name: str) -> None:
        self.filesystem().create_dir(name)

    def uri(self, path: str, credentials: bool = False) -> str:
        """An s3:// location on this server; with `credentials` they travel in the URI (for
        processes that may not have the AWS_* variables)."""
        user = "testing:testing@" if credentials else ""
        ca = f"&tls_ca_file_path={self.ca_file}" if self.ca_file else ""
        return f"s3://{user}{path}?endpoint_override=127.0.0.1:{self.port}&scheme={self.scheme}&region=us-east-1{ca}"

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join()


def self_signed_certificate(directory: str) -> tuple[str, str]:
    """A self-signed CA certificate for 127.0.0.1 and its key, as PEM files in `directory`
    (openssl's command line)."""
    cert, key = f"{directory}/ca.pem", f"{directory}/key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-addext", "basicConstraints=critical,CA:TRUE"], check=True, capture_output=True)
    return cert, key
