"""FileIO: the one place that touches storage, over pyarrow filesystems.

Paths handed around the core are plain strings in the filesystem's own namespace (for the
local filesystem: absolute paths). `FileIO.for_path` turns a user's location
(``/wh``, ``file:///wh``, ``s3://bucket/wh``, ``hdfs://nn/wh``) into a FileIO plus that path.
A data file's external path (`data-file.external-paths`) is a URI instead (``file:/cold/t/...``,
``s3://cold/t/...``): the file operations take those too, on the store the URI names.

Snapshot publication needs "create if absent" (`try_create_atomic`), which each store
provides its own way (`stores`: a hard link locally, a conditional PUT on S3, a rename on
HDFS); a store without one refuses to commit rather than risk two writers both winning.
On HDFS, replacing a file and moving a directory also use that rename (`stores.hdfs`):
pyarrow's `move` deletes an existing destination file first and nests a directory moved
onto an existing one.
"""
from __future__ import annotations

import os
import re
import threading
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from .errors import UnsupportedOperationError
from .stores import CreateIfAbsent, RemoveDirMarker, create_if_absent_for, dir_marker_remover_for, hdfs

# Filesystems whose objects appear whole when written (no rename needed for atomic replacement).
_OBJECT_STORES = tuple(getattr(pafs, name) for name in ("S3FileSystem", "GcsFileSystem", "AzureFileSystem")
                       if hasattr(pafs, name))

# A URI's scheme and colon; paths of the FileIO's own namespace start with "/" or a bucket name.
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")

T = TypeVar("T")
R = TypeVar("R")

# Requests worth having in flight at once. A local disk answers in microseconds and decoding
# is the cost, so a thread per core or two is enough; a remote store (object store, HDFS)
# answers each request after milliseconds to tens of milliseconds, so the reads of many small
# files (manifests, data files) overlap their waits instead of adding them up.
LOCAL_IO_THREADS = 4
# The longest name a file written atomically may have: its temporary ".<name>.<uuid4>.tmp" beside
# it must stay within the 255 bytes of a file name on ext4, XFS and APFS.
MAX_ATOMIC_NAME_BYTES = 255 - len("..tmp") - 36
REMOTE_IO_THREADS = 16

# A remote file of known size up to this many bytes is fetched whole, in one request, and
# decoded from memory: read in place it costs a metadata lookup, a footer read and the column
# reads, each a round trip, and at tens of milliseconds a round trip costs more than the bytes
# a column projection would have skipped.
REMOTE_WHOLE_FILE_BYTES = 4 << 20

# pyarrow's S3 errors for a GET answered 404 (it maps only its HEAD's 404 to FileNotFoundError)
_S3_GET_NOT_FOUND = ("AWS Error NO_SUCH_KEY ", "AWS Error RESOURCE_NOT_FOUND ")

# Catalog options (Paimon's keys) that complete an s3:// location, as pyarrow URI parameters.
S3_ENDPOINT, S3_REGION = "s3.endpoint", "s3.region"


@dataclass(frozen=True)
class FileStatus:
    path: str
    size: int
    mtime_ms: int
    is_dir: bool


class FileIO:
    """Storage access used by every module: read/write whole files, list, delete, atomic create."""

    def __init__(self, fs: pafs.FileSystem, uri_prefix: str = "", uri_query: str = ""):
        self.fs = fs
        self.is_local = isinstance(fs, pafs.LocalFileSystem)
        self.uri_prefix = uri_prefix
        self.uri_query = uri_query
        self._create: CreateIfAbsent | None = None
        self._remove_marker: RemoveDirMarker | None = None
        self._other_stores: dict[str, FileIO] = {}
        self._other_stores_lock = threading.Lock()

    @staticmethod
    def for_path(location: str, filesystem: pafs.FileSystem | None = None,
                 options: dict[str, str] | None = None) -> tuple["FileIO", str]:
        """FileIO and path for a location; `options` may give `s3.endpoint` (a URL) and
        `s3.region` for an s3:// location (credentials come from the URI or the AWS_* variables)."""
        if filesystem is not None:
            return FileIO(filesystem), location.rstrip("/") or "/"
        if location.startswith("file:") and not location.startswith("file://"):
            location = location[len("file:"):]  # file:/abs/path, as Spark and Hadoop qualify a local path
            if not location.startswith("/"):
                raise ValueError(f"file: location {'file:' + location!r} is not absolute (file:/abs/path or file:///abs/path)")
        if "://" not in location:
            return FileIO(pafs.LocalFileSystem()), os.path.abspath(location)
        location = _with_s3_options(_s3_scheme(location), options or {})
        fs, path = pafs.FileSystem.from_uri(location)
        parts = urllib.parse.urlsplit(location)
        userinfo, _, host = parts.netloc.rpartition("@")
        path = path.rstrip("/")
        if isinstance(fs, getattr(pafs, "AzureFileSystem", ())):  # abfs[s]://: the account names the store
            path = path.lstrip("/")  # from_uri gives "/container/..." for account.dfs.core.windows.net/container/...
            prefix = _azure_uri_prefix(parts.scheme, fs)
        elif host and (path == host or path.startswith(host + "/")):  # bucket-style: s3, gs
            prefix = f"{parts.scheme}://{userinfo + '@' if userinfo else ''}"
        else:  # host-style: hdfs://namenode:port/path
            prefix = f"{parts.scheme}://{parts.netloc}"
        return FileIO(fs, prefix, parts.query), path

    def uri(self, path: str) -> str:
        """A location string for `path` that `for_path` opens again with the same settings
        (what Spark executors receive). A FileIO built from a filesystem object gives the path.
        The path is percent-encoded, as `for_path` decodes it: a database `d%41` would otherwise
        name `dA`, and a space, `#` or `?` would not parse or would cut the query off."""
        if not self.uri_prefix:
            return path
        return f"{self.uri_prefix}{urllib.parse.quote(path, safe='/')}" + (f"?{self.uri_query}" if self.uri_query else "")

    def _at(self, path: str) -> tuple["FileIO", str]:
        """The FileIO and path for `path`: this one for its own paths; for a URI (an external
        data file) the store it names, this one when the URI is under its own prefix."""
        if not _URI_SCHEME.match(path):
            return self, path
        path = _s3_scheme(path)
        scheme, _, rest = path.partition(":")
        authority, local_path = "", rest
        if rest.startswith("//"):
            authority, slash, tail = rest[2:].partition("/")
            local_path = slash + tail
        if scheme.lower() == "file":
            return (self if self.is_local else _local_file_io()), local_path or "/"
        if self.uri_prefix and path.startswith(self.uri_prefix):
            return self, path[len(self.uri_prefix):]
        store = f"{scheme.lower()}://{authority}"
        with self._other_stores_lock:
            other = self._other_stores.get(store)
        if other is not None and other.uri_prefix and path.startswith(other.uri_prefix):
            return other, path[len(other.uri_prefix):]
        try:
            # the store is opened from its root: pyarrow's URI parser percent-decodes a path
            # (`p=k%3Dv`, a Paimon-escaped partition directory, would become the key `p=k=v`)
            # and refuses spaces and non-ASCII characters, while the key is the path as written
            other, _ = FileIO.for_path(f"{scheme}://{authority}/")
            if not (other.uri_prefix and path.startswith(other.uri_prefix) and "?" not in path):
                other, other_path = FileIO.for_path(path)  # a form whose prefix differs (Azure's container@)
                with self._other_stores_lock:
                    self._other_stores.setdefault(store, other)
                return other, other_path
        except (pa.ArrowInvalid, ValueError) as exc:
            raise UnsupportedOperationError(f"cannot open {path}: no filesystem here for its scheme "
                                            f"'{scheme}' ({exc})") from None
        with self._other_stores_lock:
            self._other_stores.setdefault(store, other)
        return other, path[len(other.uri_prefix):]

    # ---- reading ------------------------------------------------------------------------
    @property
    def io_threads(self) -> int:
        """How many reads to run at once on this store (see REMOTE_IO_THREADS)."""
        return LOCAL_IO_THREADS if self.is_local else REMOTE_IO_THREADS

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """`fn` over `items`, in order: one after another locally (metadata reads are small and
        decoded in Python), concurrently on a remote store, where each read waits on a round trip."""
        items = list(items)
        if self.is_local or len(items) < 2:
            return [fn(i) for i in items]
        with ThreadPoolExecutor(min(self.io_threads, len(items)), thread_name_prefix="paimon-io") as pool:
            return list(pool.map(fn, items))

    def read_bytes(self, path: str) -> bytes:
        io, local = self._at(path)
        with _naming(io, local, "reading"):
            try:
                with io.fs.open_input_stream(local) as f:
                    return f.read()
            except OSError as exc:
                if (type(exc) is OSError and local not in str(exc) and isinstance(io.fs, pafs.S3FileSystem)
                        and any(code in str(exc) for code in _S3_GET_NOT_FOUND)):
                    # deleted between pyarrow's HEAD and its GET (a snapshot expiring while read):
                    # absent, as the HEAD would have said a moment later
                    raise FileNotFoundError(f"{io.uri_prefix}{local} does not exist (deleted while being read): "
                                            f"{exc}") from exc
                raise

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def read_bytes_if_present(self, path: str) -> bytes | None:
        """The file's bytes, or None when it does not exist: for files whose absence is itself
        the answer (a snapshot not published yet, a consumer without progress)."""
        try:
            return self.read_bytes(path)
        except FileNotFoundError:
            return None

    def open_input_file(self, path: str, size: int | None = None):
        """A random-access file; with its `size` known and small on a remote store, its bytes
        in memory (REMOTE_WHOLE_FILE_BYTES)."""
        io, path = self._at(path)
        if size is not None and size <= REMOTE_WHOLE_FILE_BYTES and not io.is_local:
            return pa.BufferReader(io.read_bytes(path))
        return io.fs.open_input_file(path)

    def exists(self, path: str) -> bool:
        io, path = self._at(path)
        with _naming(io, path, "looking up"):
            return io.fs.get_file_info(path).type != pafs.FileType.NotFound

    def is_dir(self, path: str) -> bool:
        io, path = self._at(path)
        with _naming(io, path, "looking up"):
            return io.fs.get_file_info(path).type == pafs.FileType.Directory

    def file_size(self, path: str) -> int:
        io, path = self._at(path)
        with _naming(io, path, "looking up"):
            info = io.fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(path)
        return info.size

    def list_status(self, path: str) -> list[FileStatus]:
        """Direct children of a directory; empty when it does not exist."""
        io, local = self._at(path)
        infos = _list_dir(io.fs, local)
        if infos is None:
            return []
        # children of a URI are named as URIs too, so that this FileIO opens them again
        base, cut = (path.rstrip("/"), len(local.rstrip("/"))) if local != path else ("", 0)
        return [FileStatus(base + i.path[cut:], i.size or 0, int(i.mtime_ns // 1_000_000) if i.mtime_ns else 0,
                           i.type == pafs.FileType.Directory) for i in infos]

    def list_names(self, path: str) -> list[str]:
        return [s.path.rsplit("/", 1)[-1] for s in self.list_status(path)]

    # ---- writing ------------------------------------------------------------------------
    def mkdirs(self, path: str) -> None:
        io, path = self._at(path)
        with _naming(io, path, "creating directory"):
            io.fs.create_dir(path, recursive=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or overwrite) a whole file."""
        io, local = self._at(path)
        with _naming(io, local, "writing"), self.open_output_stream(path) as f:
            f.write(data)

    def open_output_stream(self, path: str):
        io, path = self._at(path)
        with _naming(io, path, "opening for writing"):  # S3's create_dir checks the bucket first
            io.fs.create_dir(_parent(path), recursive=True)
            return io.fs.open_output_stream(path)

    def overwrite_atomic(self, path: str, data: bytes) -> None:
        """Replace a file so readers see the old or the new content: never a partial one, and
        locally, on object stores and on HDFS never none (pyarrow's HDFS move deletes first)."""
        if isinstance(self.fs, _OBJECT_STORES):  # an object appears whole when its upload completes
            self.write_bytes(path, data)
            return
        tmp = f"{_parent(path)}/.{path.rsplit('/', 1)[-1]}.{uuid.uuid4()}.tmp"
        try:
            self.write_bytes(tmp, data)
            if self.is_local:
                os.replace(tmp, path)
            elif isinstance(self.fs, pafs.HadoopFileSystem):
                hdfs.rename(self.fs, tmp, path, replace=True)
            else:
                self.fs.move(tmp, path)
        except BaseException:
            self.delete_quietly(tmp)
            raise

    def try_create_atomic(self, path: str, data: bytes) -> bool:
        """Create `path` with `data` only if it does not exist. False when it already exists.

        Atomic on every store it is allowed on (`stores`): two writers never both win. An
        OSError means the outcome is unknown (the file may exist now)."""
        if self._create is None:
            self._create = create_if_absent_for(self.fs, self.uri_query)
        return self._create(path, data)

    def rename_dir(self, src: str, dst: str) -> None:
        """Move a directory in one atomic step (local rename(2), HDFS rename). On HDFS an
        existing `dst` raises FileExistsError, atomically (nothing moves, not even into it).
        Object stores have no directory rename (it would copy every file, visibly half-done
        on a crash)."""
        self.check_dir_rename()
        if self.is_local:
            os.rename(src, dst)
        elif not hdfs.rename(self.fs, src, dst, replace=False):
            raise FileExistsError(f"cannot move {src} to {dst}: {dst} exists")

    def check_dir_rename(self) -> None:
        """UnsupportedOperationError unless `rename_dir` can work here: asked before anything changes."""
        if not (self.is_local or isinstance(self.fs, pafs.HadoopFileSystem)):
            raise UnsupportedOperationError(
                f"renaming a directory on {self.fs.type_name} is not atomic (object stores copy every file); "
                "rename tables on a local filesystem or HDFS, or create a new table and copy the rows")

    def delete(self, path: str) -> None:
        """Delete a file; a missing file is not an error."""
        io, path = self._at(path)
        try:
            with _naming(io, path, "deleting"):
                io.fs.delete_file(path)
        except FileNotFoundError:
            pass

    def delete_quietly(self, path: str) -> None:
        try:
            self.delete(path)
        except OSError:
            pass

    def delete_empty_dir(self, path: str) -> bool:
        """Remove directory `path` when nothing is in it; True when it is gone. Nothing in it is
        ever removed, so a file a writer adds meanwhile stays: locally rmdir(2); on S3 and GCS,
        which have no directories, the marker object pyarrow leaves for one, once nothing else
        has its prefix (a file added after that check implies the directory again). Elsewhere
        (HDFS, Azure) nothing is removed: pyarrow removes their directories only with what is
        in them."""
        io, local = self._at(path)
        if io.is_local:
            try:
                os.rmdir(local)
            except FileNotFoundError:
                pass
            except OSError:  # not empty
                return False
            return True
        if io._remove_marker is None:
            io._remove_marker = dir_marker_remover_for(io.fs)
        return io._remove_marker(local)

    def delete_dir(self, path: str) -> None:
        io, path = self._at(path)
        try:
            io.fs.delete_dir(path)
        except FileNotFoundError:
            pass


class RecordedReads:
    """An input file as a Python file object that keeps the first error its store raised
    (`failure`). Decoders turn a failed read into their own errors (pyarrow's ORC reader into
    message text, its Parquet reader and fastavro into a failed decode), so once one fails,
    `failure` tells the store's fault (throttling, a gateway refusing ranged reads) from damage
    in the bytes the store delivered. pyarrow reads a Python file one request at a time: for a
    second look after a failure, not for every read (`pa.PythonFile(RecordedReads(f))`)."""

    def __init__(self, source: pa.NativeFile):
        self._source = source
        self.failure: OSError | None = None

    def read(self, nbytes: int = -1) -> bytes:
        try:
            return self._source.read(nbytes)
        except OSError as exc:
            self.failure = self.failure or exc
            raise

    def seek(self, position: int, whence: int = 0) -> int:
        return self._source.seek(position, whence)

    def tell(self) -> int:
        return self._source.tell()

    @property
    def closed(self) -> bool:
        return self._source.closed


def _list_dir(fs: pafs.FileSystem, path: str) -> list[pafs.FileInfo] | None:
    """The entries of directory `path`; None when it does not exist.

    With `allow_not_found`, pyarrow's S3 and GCS filesystems read a list request the store
    answered 404 (a flaky gateway, a NoSuchBucket from a lagging replica) as "no such
    directory", an empty listing: orphan cleanup would then see no snapshot and delete the files
    they use. Without it, each tells an absent directory from a failed request its own way: S3
    raises FileNotFoundError for the absent directory and another OSError for a failed request;
    GCS the other way round (an absent directory is a plain OSError "No such file or
    directory", a 404 answer FileNotFoundError), which is then reported as the failure it is.
    Other filesystems keep `allow_not_found` (Azure reports a 404 answer as the absent
    directory either way)."""
    if isinstance(fs, pafs.GcsFileSystem):
        try:
            return fs.get_file_info(pafs.FileSelector(path))
        except FileNotFoundError as exc:
            raise OSError(f"listing gs://{path} failed: the store answered 404 ({exc})") from exc
        except OSError as exc:
            if str(exc).startswith("No such file or directory"):
                return None
            raise
    if isinstance(fs, pafs.S3FileSystem):
        try:
            return fs.get_file_info(pafs.FileSelector(path))
        except FileNotFoundError:
            return None
    try:
        return fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except FileNotFoundError:
        return None


def _s3_scheme(location: str) -> str:
    """`s3a://` and `s3n://` (Hadoop's S3 connectors, which Java tables may name) as `s3://`:
    the same buckets and keys, and the scheme pyarrow's S3 filesystem takes."""
    scheme, sep, rest = location.partition("://")
    return f"s3://{rest}" if sep and scheme.lower() in ("s3a", "s3n") else location


def _with_s3_options(location: str, options: dict[str, str]) -> str:
    """`s3.endpoint` / `s3.region` options as the URI parameters pyarrow reads."""
    if not location.startswith("s3://") or not (options.get(S3_ENDPOINT) or options.get(S3_REGION)):
        return location
    parts = urllib.parse.urlsplit(location)
    query = dict(urllib.parse.parse_qsl(parts.query))
    endpoint = options.get(S3_ENDPOINT)
    if endpoint:
        scheme, sep, host = endpoint.partition("://")
        query["endpoint_override"] = host.rstrip("/") if sep else endpoint
        query["scheme"] = scheme if sep else query.get("scheme", "https")
    if options.get(S3_REGION):
        query["region"] = options[S3_REGION]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def _azure_uri_prefix(scheme: str, fs: pafs.FileSystem) -> str:
    """`abfs://account.blob.core.windows.net/` (an emulator: `abfs://account@host:port/`): the form
    pyarrow reads back as the same account and endpoint with the container first in the path,
    whichever form the user wrote (`container@account.dfs.core.windows.net` has the container
    outside the path)."""
    settings = fs.__reduce__()[1][0]
    account, authority = settings["account_name"], settings["blob_storage_authority"]
    return f"{scheme}://{account}{authority}/" if authority.startswith(".") else f"{scheme}://{account}@{authority}/"


_LOCAL: list[FileIO] = []


def _local_file_io() -> FileIO:
    """The local filesystem's FileIO, for `file:` URIs met by a FileIO of another store."""
    if not _LOCAL:
        _LOCAL.append(FileIO(pafs.LocalFileSystem()))
    return _LOCAL[0]


@contextmanager
def _naming(io: "FileIO", local: str, doing: str) -> Iterator[None]:
    """pyarrow's S3 errors name neither the key nor the bucket ("AWS Error SLOW_DOWN during
    GetObject operation", "When testing for existence of bucket"): say which file failed, without
    the URI's query (it may hold a SAS token). Its subclasses (FileNotFoundError, ...) pass as
    they are."""
    try:
        yield
    except OSError as exc:
        if type(exc) is not OSError or local in str(exc):
            raise
        raise OSError(f"{doing} {io.uri_prefix}{local} failed: {exc}") from exc


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."
