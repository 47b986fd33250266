"""Create-if-absent on S3: `PutObject` with `If-None-Match: *`, sent through botocore.

S3 (since 2024) and S3-compatible stores with conditional writes (MinIO, moto, ...) evaluate
`If-None-Match: *` atomically: the first PUT creates the object, every later one gets 412
Precondition Failed. pyarrow's S3FileSystem, which reads and writes every other file, cannot
send that header, so this one request goes through botocore (the `s3` extra), configured
from the pyarrow filesystem the table was opened with (endpoint, scheme, region, addressing,
credentials given in the URI or the filesystem, anonymous access, `tls_ca_file_path`,
`proxy_options`: the commit goes out under the identity and network path of the reads; a
`role_arn` botocore is not given is a configuration error naming it) and otherwise from
botocore's standard chain: environment variables, shared config and credentials files
(`AWS_PROFILE`), web identity (IRSA), SSO, container and instance-profile credentials,
`AWS_ENDPOINT_URL[_S3]`, `AWS_REGION`.

A store that ignores the header (an S3-compatible store without conditional writes) would let
two writers racing for one snapshot id both "win", the second silently replacing the first. So
before its first create in a bucket, a process checks that the store honours it: it creates a
probe object twice, expecting a 412 the second time, and deletes it (three requests once per
process and bucket); a store that answers 200 again, or refuses the header as not implemented
(501), is an UnsupportedStoreError before anything is published.

botocore's retries are off for this request: a PUT that was applied but whose reply was lost
would be retried into a 412 and read as "another writer won", and the commit would then
delete the files its own snapshot references. Instead any transport error surfaces as an
OSError (outcome unknown), and the committer re-reads to learn whether the snapshot is its own.
"""
from __future__ import annotations

import threading
import time
import urllib.parse
import uuid
from typing import Any, Iterable

from ..errors import S3ConfigurationError
from . import THROTTLED_OR_TIMED_OUT, ConditionalUpload, DirMarkerRemover, UnsupportedStoreError

_CONFLICT_RETRIES = 20  # 409 ConditionalRequestConflict: another conditional write on the key in flight
_HONOURING: set[tuple[str, str]] = set()  # (endpoint, bucket) found to honour If-None-Match
_HONOURING_LOCK = threading.Lock()


class S3CreateIfAbsent(ConditionalUpload):
    def make_client(self, settings: dict) -> Any:
        return _make_client(settings)

    def __call__(self, path: str, data: bytes) -> bool:
        bucket, _, key = path.lstrip("/").partition("/")
        self._check_honoured(bucket, key)
        return self._put_if_absent(bucket, key, data)

    def _put_if_absent(self, bucket: str, key: str, data: bytes) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
        path = f"{bucket}/{key}"
        for attempt in range(_CONFLICT_RETRIES):
            try:
                self.client().put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
                return True
            except NoCredentialsError:
                raise S3ConfigurationError(
                    f"no AWS credentials to publish s3://{path}: none in the table URI, and botocore's chain "
                    "(environment, AWS_PROFILE / shared credentials file, web identity, SSO, instance profile) "
                    "found none") from None
            except ClientError as exc:
                status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
                code = exc.response.get("Error", {}).get("Code")
                if status == 412 or code == "PreconditionFailed":
                    return False
                if status == 409 and attempt + 1 < _CONFLICT_RETRIES:
                    time.sleep(0.05 * (attempt + 1))
                    continue
                if status == 501 or code == "NotImplemented":
                    raise UnsupportedStoreError(
                        f"the store refuses conditional writes (PutObject with If-None-Match: *) to s3://{path}: "
                        f"{code} ({status}). Commits need them, or writers racing for a snapshot id would "
                        "overwrite each other; use a store that implements them (S3, MinIO, ...)") from exc
                if status is not None and 400 <= status < 500 and status not in THROTTLED_OR_TIMED_OUT:
                    raise S3ConfigurationError(f"S3 refused to create s3://{path}: {code} ({status}): {exc}") from exc
                raise OSError(f"creating s3://{path} failed with an unknown outcome: {exc}") from exc
            except BotoCoreError as exc:
                raise OSError(f"creating s3://{path} failed with an unknown outcome: {exc}") from exc
        raise OSError(f"creating s3://{path}: other conditional writes kept conflicting")

    def _check_honoured(self, bucket: str, key: str) -> None:
        """UnsupportedStoreError when the store takes a second conditional create of an object
        (it ignores If-None-Match); see the module docstring."""
        where = (str(self.client().meta.endpoint_url), bucket)
        if where in _HONOURING:
            return
        folder = key.rpartition("/")[0]
        probe = f"{folder}/.conditional-write-check-{uuid.uuid4().hex}" if folder else \
            f".conditional-write-check-{uuid.uuid4().hex}"
        try:
            self._put_if_absent(bucket, probe, b"")
            if self._put_if_absent(bucket, probe, b""):
                raise UnsupportedStoreError(
                    f"the store at {where[0]} ignores conditional writes (If-None-Match: *) in bucket {bucket}: a "
                    f"second create of s3://{bucket}/{probe} succeeded. Writers racing for one snapshot id would "
                    "silently overwrite each other's commits; use a store that implements conditional writes "
                    "(S3, MinIO, ...)")
        finally:
            try:
                self.client().delete_object(Bucket=bucket, Key=probe)
            except Exception:  # noqa: BLE001 - a probe left behind is an empty object nothing reads
                pass
        with _HONOURING_LOCK:
            _HONOURING.add(where)


class S3DirMarkerRemover(DirMarkerRemover):
    scheme = "s3"

    def make_client(self, settings: dict) -> Any:
        return _make_client(settings)

    def list_names(self, bucket: str, prefix: str) -> Iterable[str]:
        listed = self.client().list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=2).get("Contents", [])
        return [o["Key"] for o in listed]

    def delete_object(self, bucket: str, key: str) -> None:
        self.client().delete_object(Bucket=bucket, Key=key)

    def sdk_errors(self) -> tuple[type[Exception], ...]:
        from botocore.exceptions import BotoCoreError, ClientError
        return BotoCoreError, ClientError

    def gone_errors(self) -> tuple[type[Exception], ...]:
        # S3 answers a DELETE of a missing key with 204; a compatible store may say 404 NoSuchKey
        return (self.client().exceptions.NoSuchKey,)


def _make_client(args: dict) -> Any:
    try:
        import botocore.session
        from botocore.config import Config
    except ImportError:
        raise S3ConfigurationError("committing to an s3:// table needs botocore: pip install "
                                   "'paimon-streaming[s3]'") from None
    if args.get("role_arn"):
        raise S3ConfigurationError(
            f"the S3 filesystem's role_arn ({args['role_arn']}) is not carried to the botocore client that "
            "publishes snapshots, which would commit under another identity than the one reading and writing "
            "data files; assume the role through settings both follow instead: an AWS_PROFILE whose profile "
            "has role_arn and source_profile, or AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE")
    scheme = args.get("scheme") or "https"
    endpoint = args.get("endpoint_override")
    if endpoint and "://" not in endpoint:
        endpoint = f"{scheme}://{endpoint}"
    session = botocore.session.get_session()
    config = Config(retries={"total_max_attempts": 1},  # the filesystem's timeouts, else botocore's defaults
                    connect_timeout=_seconds(args.get("connect_timeout"), 10),
                    read_timeout=_seconds(args.get("request_timeout"), 60),
                    s3={"addressing_style": "virtual" if args.get("force_virtual_addressing") else
                        ("path" if endpoint else "auto")},
                    proxies=_proxies(args.get("proxy_options") or {}),
                    signature_version=botocore.UNSIGNED if args.get("anonymous") else None)
    keys = {}
    if args.get("access_key"):
        keys = {"aws_access_key_id": args["access_key"], "aws_secret_access_key": args.get("secret_key"),
                "aws_session_token": args.get("session_token") or None}
    region = args.get("region") or session.get_config_variable("region") or "us-east-1"
    return session.create_client("s3", region_name=region, endpoint_url=endpoint or None, config=config,
                                 use_ssl=scheme != "http", verify=args.get("tls_ca_file_path") or None, **keys)


def _seconds(value: float | None, default: float) -> float:
    """A pyarrow timeout setting (-1: unset) in seconds."""
    return value if value is not None and value > 0 else default


def _proxies(options: dict) -> dict[str, str] | None:
    """pyarrow's `proxy_options` (every request through one proxy) as botocore's `proxies`."""
    if not options.get("host"):
        return None
    user = options.get("username") or ""
    password = options.get("password") or ""
    credentials = f"{urllib.parse.quote(user, safe='')}:{urllib.parse.quote(password, safe='')}@" if user else ""
    port = f":{options['port']}" if (options.get("port") or -1) > 0 else ""
    url = f"{options.get('scheme') or 'http'}://{credentials}{options['host']}{port}"
    return {"http": url, "https": url}
