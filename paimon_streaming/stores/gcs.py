"""Create-if-absent on Google Cloud Storage: an upload with the precondition
`ifGenerationMatch=0` ("only if no live object has this name"), which GCS decides atomically;
412 Precondition Failed means another writer created it first.

pyarrow's GcsFileSystem reads and writes every other file but cannot send preconditions, so
this one request goes through google-cloud-storage (the `gcs` extra), configured from the
pyarrow filesystem the table was opened with (endpoint, scheme, project, anonymous access,
access token, the service account it impersonates) and otherwise from Google's Application
Default Credentials (the GOOGLE_APPLICATION_CREDENTIALS file, gcloud's user credentials,
workload identity, the metadata server). The client's retries are off for this request, for
the reason `stores.s3` gives: a create whose reply was lost must stay an unknown outcome
(OSError), never look like a lost race.
"""
from __future__ import annotations

from typing import Any, Iterable

from ..errors import StoreConfigurationError
from . import THROTTLED_OR_TIMED_OUT, ConditionalUpload, DirMarkerRemover


class GcsCreateIfAbsent(ConditionalUpload):
    def make_client(self, settings: dict) -> Any:
        return _make_client(settings)

    def __call__(self, path: str, data: bytes) -> bool:
        from google.api_core import exceptions as gexc
        from google.auth import exceptions as auth_exc
        bucket, _, name = path.lstrip("/").partition("/")
        try:
            self.client().bucket(bucket).blob(name).upload_from_string(data, if_generation_match=0, retry=None)
            return True
        except gexc.PreconditionFailed:
            return False
        except auth_exc.DefaultCredentialsError as exc:
            raise StoreConfigurationError(f"no Google credentials to publish gs://{path}: {exc}") from None
        except gexc.ClientError as exc:  # 4xx other than 412: refused, nothing was created
            if exc.code in THROTTLED_OR_TIMED_OUT:  # a rate limit or a timeout, not a configuration error
                raise OSError(f"creating gs://{path} failed with an unknown outcome: {exc}") from exc
            raise StoreConfigurationError(f"GCS refused to create gs://{path}: {exc}") from exc
        except Exception as exc:  # transport errors, 5xx: the create may have been applied
            raise OSError(f"creating gs://{path} failed with an unknown outcome: {exc}") from exc


class GcsDirMarkerRemover(DirMarkerRemover):
    scheme = "gs"

    def make_client(self, settings: dict) -> Any:
        return _make_client(settings)

    def list_names(self, bucket: str, prefix: str) -> Iterable[str]:
        return [b.name for b in self.client().list_blobs(bucket, prefix=prefix, max_results=2)]

    def delete_object(self, bucket: str, key: str) -> None:
        self.client().bucket(bucket).blob(key).delete()

    def sdk_errors(self) -> tuple[type[Exception], ...]:
        import requests
        from google.api_core.exceptions import GoogleAPIError
        from google.auth.exceptions import GoogleAuthError
        return GoogleAPIError, GoogleAuthError, requests.RequestException

    def gone_errors(self) -> tuple[type[Exception], ...]:
        from google.api_core.exceptions import NotFound
        return (NotFound,)


def _make_client(args: dict) -> Any:
    try:
        from google.cloud import storage
    except ImportError:
        raise StoreConfigurationError("committing to a gs:// table needs google-cloud-storage: pip install "
                                   "'paimon-streaming[gcs]'") from None
    options = {}
    if args.get("endpoint_override"):
        options["api_endpoint"] = f"{args.get('scheme') or 'https'}://{args['endpoint_override']}"
    project = args.get("project_id") or None
    if args.get("anonymous"):
        from google.auth.credentials import AnonymousCredentials
        return storage.Client(project=project or "anonymous", credentials=AnonymousCredentials(),
                              client_options=options or None)
    credentials = None
    if args.get("access_token"):
        from google.oauth2.credentials import Credentials
        credentials = Credentials(args["access_token"])
    if args.get("target_service_account"):  # pyarrow impersonates it with the credentials it has
        import google.auth
        from google.auth import impersonated_credentials
        credentials = impersonated_credentials.Credentials(
            source_credentials=credentials or google.auth.default(scopes=storage.Client.SCOPE)[0],
            target_principal=args["target_service_account"], target_scopes=list(storage.Client.SCOPE))
    return storage.Client(project=project, credentials=credentials, client_options=options or None)
