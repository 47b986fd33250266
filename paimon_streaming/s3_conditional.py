"""Create-if-absent on S3: a PUT with `If-None-Match: *`, so two writers never both win a key.

Paimon publishes a snapshot by creating `snapshot/snapshot-<id>` only if it does not exist.
On S3 an existence check followed by a write is a race (both writers see "absent", both
write, the last one silently replaces the first). S3 (since 2024) and S3-compatible stores
such as MinIO and moto evaluate `If-None-Match: *` atomically: the first PUT creates the
object, every later one gets 412 Precondition Failed. pyarrow's S3FileSystem cannot send
that header, so this module sends the one request itself with the standard library
(urllib + AWS Signature Version 4), reusing the settings of the pyarrow filesystem the table
was opened with (endpoint, scheme, region, credentials from the URI), and the standard
environment variables for what pyarrow does not expose (`AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_ENDPOINT_URL[_S3]`, `AWS_REGION`,
`AWS_DEFAULT_REGION`). Credentials only reachable through other providers (instance
profiles, SSO) are not looked up: conditional publication then fails with an error saying
which variables to set.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

import pyarrow.fs as pafs

from .errors import S3ConfigurationError

ALGORITHM = "AWS4-HMAC-SHA256"
# Like pyarrow's S3 client, ignore the HTTP(S)_PROXY environment variables.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class S3Settings:
    """Where and as whom to send requests; `endpoint` None means AWS itself."""
    access_key: str
    secret_key: str
    session_token: str | None
    region: str
    endpoint: str | None          # scheme://host[:port] of an S3-compatible server
    virtual_host: bool            # bucket in the host name instead of the path

    @staticmethod
    def of(fs: pafs.S3FileSystem) -> "S3Settings":
        """The settings a pyarrow S3FileSystem uses, completed from the environment."""
        args = fs.__reduce__()[1][0]  # the keyword arguments pyarrow rebuilds the filesystem from
        env = os.environ
        access = args.get("access_key") or env.get("AWS_ACCESS_KEY_ID")
        secret = args.get("secret_key") or env.get("AWS_SECRET_ACCESS_KEY")
        if not access or not secret:
            raise S3ConfigurationError(
                "publishing a snapshot on S3 needs credentials for a conditional PUT: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), or put them in the table URI")
        token = args.get("session_token") or (env.get("AWS_SESSION_TOKEN") if not args.get("access_key") else None)
        endpoint = args.get("endpoint_override") or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
        if endpoint and "://" not in endpoint:
            endpoint = f"{args.get('scheme') or 'https'}://{endpoint}"
        region = args.get("region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
        virtual = bool(args.get("force_virtual_addressing")) or endpoint is None
        return S3Settings(access, secret, token or None, region, endpoint.rstrip("/") if endpoint else None,
                          virtual)

    def url(self, bucket: str, key: str) -> str:
        quoted_key = urllib.parse.quote(key, safe="/-_.~")
        if self.endpoint is None:
            return f"https://{bucket}.s3.{self.region}.amazonaws.com/{quoted_key}"
        scheme, _, host = self.endpoint.partition("://")
        if self.virtual_host:
            return f"{scheme}://{bucket}.{host}/{quoted_key}"
        return f"{self.endpoint}/{urllib.parse.quote(bucket, safe='-_.~')}/{quoted_key}"


def sign(method: str, url: str, headers: dict[str, str], payload_sha256: str, settings: S3Settings,
         now: dt.datetime) -> dict[str, str]:
    """Headers of a request signed with AWS Signature Version 4 (service s3).

    `headers` are the extra headers to sign (names in any case); the result adds Host,
    X-Amz-Date, X-Amz-Content-Sha256, X-Amz-Security-Token (if any) and Authorization.
    """
    parts = urllib.parse.urlsplit(url)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    signed = {k.lower(): " ".join(str(v).strip().split()) for k, v in headers.items()}
    signed["host"] = parts.netloc
    signed["x-amz-date"] = amz_date
    signed["x-amz-content-sha256"] = payload_sha256
    if settings.session_token:
        signed["x-amz-security-token"] = settings.session_token
    names = sorted(signed)
    query = "&".join(sorted(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                            for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)))
    canonical = "\n".join([method, parts.path or "/", query,
                           "".join(f"{n}:{signed[n]}\n" for n in names), ";".join(names), payload_sha256])
    scope = f"{day}/{settings.region}/s3/aws4_request"
    to_sign = "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + settings.secret_key).encode()
    for part in (day, settings.region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out = {n: signed[n] for n in names}
    out["authorization"] = (f"{ALGORITHM} Credential={settings.access_key}/{scope}, "
                            f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return out


def put_if_absent(settings: S3Settings, path: str, data: bytes, timeout: float = 60.0) -> bool:
    """PUT `data` at `path` ("bucket/key") only if no object is there; False if one is.

    409 (a concurrent conditional write to the same key is in flight) also means "not ours":
    the caller re-reads and retries, as after a 412. Any other failure raises OSError, whose
    outcome the caller must treat as unknown (the object may have been created).
    """
    bucket, _, key = path.partition("/")
    url = settings.url(bucket, key)
    headers = sign("PUT", url, {"If-None-Match": "*"}, hashlib.sha256(data).hexdigest(), settings,
                   dt.datetime.now(dt.timezone.utc))
    # an explicit type: urllib's default (form-urlencoded) makes some servers parse the body as a form
    headers["content-type"] = "application/octet-stream"
    request = urllib.request.Request(url, data=data, method="PUT", headers=headers)
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            response.read()
        return True
    except urllib.error.HTTPError as exc:
        if exc.code in (409, 412):
            return False
        body = exc.read()[:300].decode("utf-8", "replace")
        raise OSError(f"conditional PUT of s3://{path} failed with HTTP {exc.code}: {body}") from exc
    except urllib.error.URLError as exc:
        raise OSError(f"conditional PUT of s3://{path} failed: {exc.reason}") from exc
