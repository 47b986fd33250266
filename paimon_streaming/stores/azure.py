"""Create-if-absent on Azure Blob Storage / ADLS Gen2: an upload with `If-None-Match: *`, which
the service decides atomically; 409 BlobAlreadyExists (or 412) means another writer won.

pyarrow's AzureFileSystem reads and writes every other file but cannot send that condition,
so this one request goes through azure-storage-blob (the `azure` extra), configured from the
pyarrow filesystem the table was opened with: account, blob endpoint (so the Azurite emulator
works), and its credential, chosen the way pyarrow chooses it: an abfs:// URI's
`credential_kind` (which pyarrow keeps out of the filesystem's settings, so it is read from the
URI), account key, SAS token (from the URI's query), a service principal's client secret, a
user-assigned managed identity's client id; without any, azure-identity's
DefaultAzureCredential (environment, workload identity, managed identity, Azure CLI). The client's retries are off for this
request, for the reason `stores.s3` gives: a create whose reply was lost must stay an unknown
outcome (OSError).
"""
from __future__ import annotations

import urllib.parse
from typing import Any

from ..errors import StoreConfigurationError
from . import THROTTLED_OR_TIMED_OUT, ConditionalUpload

# Query keys of an abfs:// URI that pyarrow reads itself; its `sas_token` setting keeps the whole query.
_ARROW_URI_KEYS = {"enable_tls", "blob_storage_authority", "dfs_storage_authority", "credential_kind", "tenant_id",
                   "client_id", "client_secret", "background_writes"}


class AzureCreateIfAbsent(ConditionalUpload):
    def __init__(self, fs: Any, uri_query: str = ""):
        super().__init__(fs)
        kind = urllib.parse.parse_qs(uri_query).get("credential_kind")
        if kind:
            self.settings = {**self.settings, "credential_kind": kind[-1]}

    def make_client(self, settings: dict) -> Any:
        return _make_client(settings)

    def __call__(self, path: str, data: bytes) -> bool:
        from azure.core import exceptions as aexc
        container, _, name = path.lstrip("/").partition("/")
        try:
            self.client().get_blob_client(container, name).upload_blob(data, overwrite=False)
            return True
        except aexc.ClientAuthenticationError as exc:  # before any request was applied: nothing created
            raise StoreConfigurationError(f"no usable Azure credential to publish {path}: {exc}") from exc
        except aexc.HttpResponseError as exc:
            if exc.status_code == 412 or exc.error_code == "BlobAlreadyExists":
                return False
            if exc.status_code is not None and 400 <= exc.status_code < 500 and \
                    exc.status_code not in THROTTLED_OR_TIMED_OUT:
                raise StoreConfigurationError(f"Azure refused to create {path}: {exc.message}") from exc
            raise OSError(f"creating {path} on Azure failed with an unknown outcome: {exc}") from exc
        except aexc.AzureError as exc:  # transport errors: the create may have been applied
            raise OSError(f"creating {path} on Azure failed with an unknown outcome: {exc}") from exc


def _account_url(args: dict) -> str:
    account = args["account_name"]
    authority = args.get("blob_storage_authority") or ".blob.core.windows.net"
    scheme = args.get("blob_storage_scheme") or "https"
    if authority.startswith("."):
        return f"{scheme}://{account}{authority}"
    return f"{scheme}://{authority}/{account}"  # an emulator's host:port, path-style


def _make_client(args: dict) -> Any:
    try:
        from azure.storage.blob import BlobServiceClient
    except ImportError:
        raise StoreConfigurationError("committing to an Azure table needs azure-storage-blob: pip install "
                                      "'paimon-streaming[azure]'") from None
    if args.get("credential_kind"):
        credential: Any = _credential_of_kind(args["credential_kind"])
    elif args.get("account_key"):
        credential = {"account_name": args["account_name"], "account_key": args["account_key"]}
    elif args.get("sas_token"):
        credential = _sas_only(args["sas_token"])
    else:
        try:
            from azure.identity import ClientSecretCredential, DefaultAzureCredential, ManagedIdentityCredential
        except ImportError:
            raise StoreConfigurationError("Azure credentials other than an account key or SAS token need "
                                          "azure-identity: pip install 'paimon-streaming[azure]'") from None
        if args.get("client_secret"):
            credential = ClientSecretCredential(args["tenant_id"], args["client_id"], args["client_secret"])
        elif args.get("client_id"):
            credential = ManagedIdentityCredential(client_id=args["client_id"])
        else:
            credential = DefaultAzureCredential()
    return BlobServiceClient(_account_url(args), credential=credential, retry_total=0)


def _credential_of_kind(kind: str) -> Any:
    """The credential pyarrow uses for an abfs:// URI's `credential_kind` (None: anonymous)."""
    if kind == "anonymous":
        return None
    try:
        from azure import identity
    except ImportError:
        raise StoreConfigurationError(f"Azure credential_kind={kind} needs azure-identity: pip install "
                                      "'paimon-streaming[azure]'") from None
    kinds = {"default": identity.DefaultAzureCredential, "cli": identity.AzureCliCredential,
             "workload_identity": identity.WorkloadIdentityCredential, "environment": identity.EnvironmentCredential}
    if kind not in kinds:
        raise StoreConfigurationError(f"unknown Azure credential_kind {kind!r} (pyarrow takes {sorted(kinds)} and "
                                      "'anonymous')")
    try:
        return kinds[kind]()
    except ValueError as exc:  # e.g. workload identity without its environment variables
        raise StoreConfigurationError(f"Azure credential_kind={kind}: {exc}") from exc


def _sas_only(query: str) -> str:
    """The SAS parameters of a URI query, as given (their encoding is part of the signature)."""
    return "&".join(item for item in query.lstrip("?").split("&")
                    if item and item.partition("=")[0] not in _ARROW_URI_KEYS)
