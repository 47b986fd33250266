"""HDFS: create-if-absent, atomic replace and directory moves by the NameNode's own rename.

pyarrow's `HadoopFileSystem.move` cannot publish a snapshot: when HDFS refuses to rename onto
an existing file, pyarrow deletes that file and renames again, so two writers racing for one
id would both win. libhdfs's `hdfsRename` (Java `FileSystem#rename`) refuses an existing file,
but moves a source *into* an existing directory. What is needed is HDFS's `rename2`, Java
`FileSystem#rename(src, dst, Options.Rename...)`: one atomic step at the NameNode that either
refuses any existing destination (`NONE`) or replaces a file (`OVERWRITE`). libhdfs does not
offer it, so it is called here through JNI (ctypes), in the JVM that libhdfs runs for pyarrow:

  - libhdfs.so and libjvm.so are the copies pyarrow loaded (found in /proc/self/maps, else
    where pyarrow looks: ARROW_LIBHDFS_DIR or HADOOP_HOME/lib/native, and JAVA_HOME);
  - the Java FileSystem comes from libhdfs's `hdfsBuilderConnect`, given the options the
    pyarrow filesystem was built with (its handle is a JNI global reference to the FileSystem).
    One is kept per option set for the process and never disconnected: Hadoop shares cached
    FileSystem objects, so closing ours could close the one pyarrow's connections use.

Through a Hadoop FileSystem other than HDFS (`HadoopFileSystem("default")` on another
`fs.defaultFS`), this rename is only as atomic as that FileSystem makes it.
"""
from __future__ import annotations

import ctypes
import errno
import os
import threading

import pyarrow.fs as pafs

from ..errors import StoreConfigurationError
from .rename import TempFileCreateIfAbsent


class HdfsClientError(StoreConfigurationError):
    """libhdfs or the JVM that pyarrow's HadoopFileSystem runs on cannot be found or used."""


class HdfsCreateIfAbsent(TempFileCreateIfAbsent):
    """Write a temp file through pyarrow, then rename it onto the target, refusing a taken name."""

    def __init__(self, fs: pafs.HadoopFileSystem):
        super().__init__(fs, lambda tmp, path: rename(fs, tmp, path, replace=False))


def rename(fs: pafs.HadoopFileSystem, src: str, dst: str, replace: bool) -> bool:
    """Rename `src` to `dst` in one atomic step. `dst` existing: with `replace`, a file is
    replaced (readers see the old or the new one, never none); without, nothing changes and
    the answer is False. Any other failure raises OSError (FileNotFoundError for a missing
    `src` or parent of `dst`, PermissionError when HDFS denies it)."""
    handle = _filesystem(fs)
    with _java() as jni:
        jsrc, jdst = jni.path(src), jni.path(dst)
        option_class = jni.find_class("org/apache/hadoop/fs/Options$Rename")
        field = jni("GetStaticFieldID", option_class, b"OVERWRITE" if replace else b"NONE",
                    b"Lorg/apache/hadoop/fs/Options$Rename;")
        options = jni("NewObjectArray", 1, option_class, jni("GetStaticObjectField", option_class, field))
        method = jni("GetMethodID", jni.find_class("org/apache/hadoop/fs/FileSystem"), b"rename",
                     b"(Lorg/apache/hadoop/fs/Path;Lorg/apache/hadoop/fs/Path;[Lorg/apache/hadoop/fs/Options$Rename;)V")
        try:
            jni("CallVoidMethodA", handle, method, _args(jsrc, jdst, options))
            return True
        except _JavaException as exc:
            if jni.is_instance(exc.throwable, "org/apache/hadoop/fs/FileAlreadyExistsException"):
                return False
            code = next((code for java_class, code in _ERRNO if jni.is_instance(exc.throwable, java_class)), errno.EIO)
            error = OSError(code, f"HDFS rename {src} -> {dst} failed: {exc.strerror}")
    if not replace and _exists(fs, src) and _exists(fs, dst):
        return False  # taken by the other kind (file / directory): HDFS refuses with a plain IOException
    raise error


def _exists(fs: pafs.HadoopFileSystem, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


_ERRNO = (("java/io/FileNotFoundException", errno.ENOENT),
          ("org/apache/hadoop/security/AccessControlException", errno.EACCES))


# ---- libhdfs and the JVM ---------------------------------------------------------------

_lock = threading.Lock()
_libraries: tuple[ctypes.CDLL, ctypes.c_void_p] | None = None  # libhdfs, the JavaVM*
_connections: dict[tuple, int] = {}  # pyarrow options -> hdfsFS (a global reference to a Java FileSystem)

_vp, _cp = ctypes.c_void_p, ctypes.c_char_p

# The JNINativeInterface functions used: (slot, result, arguments after the JNIEnv*). Slots are
# fixed by the JNI specification.
_JNI_FUNCTIONS = {
    "FindClass": (6, _vp, [_cp]),
    "ExceptionOccurred": (15, _vp, []),
    "ExceptionClear": (17, None, []),
    "PushLocalFrame": (19, ctypes.c_int32, [ctypes.c_int32]),
    "PopLocalFrame": (20, _vp, [_vp]),
    "NewObjectA": (30, _vp, [_vp, _vp, _vp]),
    "GetObjectClass": (31, _vp, [_vp]),
    "IsInstanceOf": (32, ctypes.c_uint8, [_vp, _vp]),
    "GetMethodID": (33, _vp, [_vp, _cp, _cp]),
    "CallObjectMethodA": (36, _vp, [_vp, _vp, _vp]),
    "CallVoidMethodA": (63, None, [_vp, _vp, _vp]),
    "GetStaticFieldID": (144, _vp, [_vp, _cp, _cp]),
    "GetStaticObjectField": (145, _vp, [_vp, _vp]),
    "NewStringUTF": (167, _vp, [_cp]),
    "GetStringUTFChars": (169, _vp, [_vp, _vp]),
    "ReleaseStringUTFChars": (170, None, [_vp, _vp]),
    "NewObjectArray": (172, _vp, [ctypes.c_int32, _vp, _vp]),
}
_PROTOTYPES = {name: (slot, ctypes.CFUNCTYPE(result, _vp, *args)) for name, (slot, result, args) in _JNI_FUNCTIONS.items()}
# The JNIInvokeInterface (JavaVM) functions used, by slot.
_DETACH = (5, ctypes.CFUNCTYPE(ctypes.c_int32, _vp))
_ATTACH = (4, ctypes.CFUNCTYPE(ctypes.c_int32, _vp, ctypes.POINTER(_vp), _vp))
_GET_ENV = (6, ctypes.CFUNCTYPE(ctypes.c_int32, _vp, ctypes.POINTER(_vp), ctypes.c_int32))
_JNI_OK, _JNI_EDETACHED, _JNI_VERSION_1_8 = 0, -2, 0x10008


def _loaded(prefix: str) -> str | None:
    """The path of a loaded shared library whose file name starts with `prefix`."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if os.path.basename(path).startswith(prefix):
                    return path
    except OSError:
        pass
    return None


def _open(prefix: str, fallbacks: list[str]) -> ctypes.CDLL:
    candidates = [p for p in [_loaded(prefix), *fallbacks] if p and os.path.exists(p)]
    if not candidates:
        raise HdfsClientError(f"{prefix} is not loaded in this process and is not at any of {fallbacks}: "
                              "set ARROW_LIBHDFS_DIR (or HADOOP_HOME) and JAVA_HOME as for pyarrow's HadoopFileSystem")
    return ctypes.CDLL(candidates[0], use_errno=True)


def _native() -> tuple[ctypes.CDLL, ctypes.c_void_p]:
    global _libraries
    with _lock:
        if _libraries is None:
            hdfs_dirs = [os.environ.get("ARROW_LIBHDFS_DIR", ""), os.path.join(os.environ.get("HADOOP_HOME", ""), "lib", "native")]
            hdfs = _open("libhdfs.so", [os.path.join(d, "libhdfs.so") for d in hdfs_dirs if d])
            java_home = os.environ.get("JAVA_HOME", "")
            jvm = _open("libjvm.so", [os.path.join(java_home, "lib", "server", "libjvm.so")] if java_home else [])
            vm, count = _vp(), ctypes.c_int32()
            if jvm.JNI_GetCreatedJavaVMs(ctypes.byref(vm), 1, ctypes.byref(count)) != _JNI_OK or count.value != 1:
                raise HdfsClientError("no JVM runs in this process: connect a pyarrow HadoopFileSystem first")
            for name, result, args in (("hdfsNewBuilder", _vp, []), ("hdfsBuilderSetNameNode", None, [_vp, _cp]),
                                       ("hdfsBuilderSetNameNodePort", None, [_vp, ctypes.c_uint16]),
                                       ("hdfsBuilderSetUserName", None, [_vp, _cp]),
                                       ("hdfsBuilderSetKerbTicketCachePath", None, [_vp, _cp]),
                                       ("hdfsBuilderConfSetStr", ctypes.c_int, [_vp, _cp, _cp]),
                                       ("hdfsBuilderConnect", _vp, [_vp])):
                getattr(hdfs, name).restype, getattr(hdfs, name).argtypes = result, args
            _libraries = hdfs, vm
        return _libraries


def _filesystem(fs: pafs.HadoopFileSystem) -> int:
    """The Java FileSystem for pyarrow's `fs`, connected as pyarrow connects (same options)."""
    options = fs.__reduce__()[1][0]  # the keyword arguments pyarrow rebuilds the filesystem from
    key = (options["host"], options["port"], options["user"], options["kerb_ticket"],
           tuple(sorted(options["extra_conf"].items())))
    hdfs, _ = _native()
    with _lock:
        if key not in _connections:
            builder = hdfs.hdfsNewBuilder()
            strings = {k: options[k].encode() for k in ("host", "user", "kerb_ticket")}  # alive until connected:
            conf = [(k.encode(), v.encode()) for k, v in options["extra_conf"].items()]   # the builder keeps pointers
            if strings["host"]:
                hdfs.hdfsBuilderSetNameNode(builder, strings["host"])
            hdfs.hdfsBuilderSetNameNodePort(builder, options["port"])
            if strings["user"]:
                hdfs.hdfsBuilderSetUserName(builder, strings["user"])
            if strings["kerb_ticket"]:
                hdfs.hdfsBuilderSetKerbTicketCachePath(builder, strings["kerb_ticket"])
            for k, v in conf:
                hdfs.hdfsBuilderConfSetStr(builder, k, v)
            handle = hdfs.hdfsBuilderConnect(builder)  # frees the builder
            if not handle:
                raise OSError(ctypes.get_errno() or errno.EIO,
                              f"libhdfs could not connect to HDFS at {options['host']}:{options['port']}")
            _connections[key] = handle
        return _connections[key]


class _JavaException(OSError):
    """A Java exception thrown in a JNI call (an OSError: the HDFS operation's outcome is unknown)."""

    def __init__(self, throwable: int, text: str):
        super().__init__(errno.EIO, text)
        self.throwable = throwable


class _java:
    """The current thread's JNIEnv for one block, with a local frame that frees every Java object
    made in it; a thread libhdfs has not attached yet is attached for the block only."""

    def __enter__(self) -> "_java":
        self.vm = _native()[1]
        env = _vp()
        status = self.invoke(_GET_ENV, ctypes.byref(env), _JNI_VERSION_1_8)
        self.attached = status == _JNI_EDETACHED
        if self.attached:
            status = self.invoke(_ATTACH, ctypes.byref(env), None)
        if status != _JNI_OK:
            raise HdfsClientError(f"cannot use the JVM from this thread (JNI status {status})")
        self.env = env
        self.table = ctypes.cast(env, ctypes.POINTER(ctypes.POINTER(_vp)))[0]
        self("PushLocalFrame", 32)
        return self

    def __exit__(self, *exc) -> None:
        self.raw("PopLocalFrame", None)
        if self.attached:
            self.invoke(_DETACH)

    def invoke(self, function: tuple, *args) -> int:
        slot, prototype = function
        return prototype(ctypes.cast(self.vm, ctypes.POINTER(ctypes.POINTER(_vp)))[0][slot])(self.vm, *args)

    def raw(self, name: str, *args):
        slot, prototype = _PROTOTYPES[name]
        return prototype(self.table[slot])(self.env, *args)

    def __call__(self, name: str, *args):
        """Call a JNI function; a Java exception it leaves pending is raised as _JavaException."""
        result = self.raw(name, *args)
        throwable = self.raw("ExceptionOccurred")
        if throwable:
            self.raw("ExceptionClear")
            raise _JavaException(throwable, self.text(throwable))
        return result

    def find_class(self, name: str) -> int:
        return self("FindClass", name.encode())

    def is_instance(self, obj: int, class_name: str) -> bool:
        return bool(self("IsInstanceOf", obj, self.find_class(class_name)))

    def path(self, path: str) -> int:
        path_class = self.find_class("org/apache/hadoop/fs/Path")
        constructor = self("GetMethodID", path_class, b"<init>", b"(Ljava/lang/String;)V")
        return self("NewObjectA", path_class, constructor, _args(self("NewStringUTF", path.encode())))

    def text(self, obj: int) -> str:
        """`obj.toString()` (the exception's class and message), best effort."""
        method = self.raw("GetMethodID", self.raw("GetObjectClass", obj), b"toString", b"()Ljava/lang/String;")
        string = self.raw("CallObjectMethodA", obj, method, None) if method else None
        if self.raw("ExceptionOccurred") or not string:
            self.raw("ExceptionClear")
            return "a Java exception"
        chars = self.raw("GetStringUTFChars", string, None)
        try:
            return ctypes.string_at(chars).decode("utf-8", "replace").strip()
        finally:
            self.raw("ReleaseStringUTFChars", string, chars)


def _args(*objects: int) -> ctypes.Array:
    """A jvalue[] of object references (a jvalue is one 64-bit slot)."""
    return (_vp * len(objects))(*objects)
