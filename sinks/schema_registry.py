"""Confluent Schema Registry: Avro records framed as Confluent's serializers write them.

A framed value is a zero magic byte, the writer schema's id (4 bytes, big-endian) and the Avro
binary body. The writer schemas are fetched by id (`GET <url>/schemas/ids/<id>`) from where the
record is decoded (the driver in local mode, else the writing tasks) and kept for the life of
the process: an id names one schema forever. A schema's references (types defined in other
subjects, `GET <url>/subjects/<subject>/versions/<version>`) are fetched too and defined where
first used, so the schema stands alone. Credentials in the URL (`https://user:secret@host`)
are sent as HTTP basic authentication, as Confluent's clients do with `basic.auth.user.info`.
"""
from __future__ import annotations

import base64
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from paimon_streaming.errors import PaimonError

MAGIC = 0
HEADER = 5
_ATTEMPTS = 3
_cache: dict[tuple, Any] = {}
_lock = threading.Lock()


class SchemaRegistryError(PaimonError):
    """A writer schema the registry does not give (unknown id, not Avro, unreachable)."""


def frame(schema_id: int, body: bytes) -> bytes:
    """A record value as Confluent's Avro serializer writes it."""
    return bytes([MAGIC]) + schema_id.to_bytes(4, "big") + body


def schema_id(value: bytes) -> int:
    """The writer schema id of a framed value (ValueError when it is not framed)."""
    if len(value) < HEADER or value[0] != MAGIC:
        raise ValueError("not in the Schema Registry's wire format (a zero magic byte and a 4-byte schema id)")
    return int.from_bytes(value[1:HEADER], "big")


def writer_schema(url: str, sid: int, timeout: float = 10.0) -> Any:
    """The parsed Avro writer schema of id `sid` (fetched once per process)."""
    import fastavro
    from .avro_types import readable
    return _cached((url, sid, "parsed"), lambda: fastavro.parse_schema(readable(writer_schema_json(url, sid, timeout))))


def writer_schema_json(url: str, sid: int, timeout: float = 10.0) -> Any:
    """The Avro writer schema of id `sid` as the registry gives it (JSON), fetched once per process."""
    def fetch() -> Any:
        document = _get(url, f"/schemas/ids/{sid}", timeout)
        kind = document.get("schemaType", "AVRO")
        if kind != "AVRO":
            raise SchemaRegistryError(f"schema {sid} of the registry at {_public(url)} is {kind}, not Avro")
        import fastavro
        try:
            schema = _with_references(url, document, timeout, ())
            fastavro.parse_schema(schema)
        except (KeyError, TypeError, ValueError, fastavro.schema.SchemaParseException) as exc:
            raise SchemaRegistryError(f"schema {sid} of the registry at {_public(url)} is not an Avro schema: "
                                      f"{exc}") from None
        return schema
    return _cached((url, sid, "json"), fetch)


def _with_references(url: str, document: dict, timeout: float, chain: tuple) -> Any:
    """A registry document's Avro schema standing alone: the types its `references` name
    (each a subject's version, maybe referencing others) defined where first used."""
    schema = json.loads(document["schema"])
    references = document.get("references") or []
    if not references:
        return schema
    from .avro_types import inline_references
    definitions = {}
    for ref in references:
        at = (ref["subject"], int(ref["version"]))
        if at in chain:
            raise SchemaRegistryError(f"the schemas of the registry at {_public(url)} reference each other in a cycle: "
                                      f"{' -> '.join(f'{s} v{v}' for s, v in chain + (at,))}")
        path = f"/subjects/{urllib.parse.quote(at[0], safe='')}/versions/{at[1]}"
        referenced = _cached((url, path), lambda: _get(url, path, timeout))
        if referenced.get("schemaType", "AVRO") != "AVRO":
            raise SchemaRegistryError(f"{path} of the registry at {_public(url)} is not Avro")
        definitions[ref["name"]] = _with_references(url, referenced, timeout, chain + (at,))
    return inline_references(schema, definitions)


def _cached(key: tuple, make) -> Any:
    with _lock:
        if key in _cache:
            return _cache[key]
    value = make()
    with _lock:
        _cache[key] = value
    return value


def _get(url: str, path: str, timeout: float) -> dict:
    parts = urllib.parse.urlsplit(url)
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
    request = urllib.request.Request(urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/") + path, "", "")),
                                     headers={"Accept": "application/vnd.schemaregistry.v1+json, application/json"})
    if parts.username is not None:
        secret = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        request.add_header("Authorization", "Basic " + base64.b64encode(secret.encode()).decode())
    for attempt in range(_ATTEMPTS):
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code < 500 or attempt == _ATTEMPTS - 1:
                raise SchemaRegistryError(f"the registry at {_public(url)} answered {exc.code} for {path}: "
                                          f"{exc.read()[:200].decode(errors='replace')}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            if attempt == _ATTEMPTS - 1:
                raise SchemaRegistryError(f"the registry at {_public(url)} is unreachable for {path}: {exc}") from None
        time.sleep(0.2 * 2 ** attempt)
    raise AssertionError("unreachable")


def _public(url: str) -> str:
    """The URL without its credentials (for messages)."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname else parts.netloc
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
