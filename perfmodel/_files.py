"""Reading and writing files safely, for every file perfmodel reads or writes (profiles, calibrations,
bench datasets, MoE log metadata, charts). Floor 0: the standard library and :mod:`perfmodel.errors` only.

Reading (:func:`read_bytes`, :func:`read_text`, :func:`load_json`):

* only **regular files**: a FIFO (it would block until a writer comes), a device (``/dev/zero`` never
  ends), a socket or a folder is refused before a byte is read (the file is opened non-blocking);
* at most a **size limit** of bytes: :data:`PROFILE_MAX_BYTES` (1 GiB) for Proton profiles,
  :data:`DATA_MAX_BYTES` (64 MiB) for calibrations, bench datasets and log metadata. The environment
  variable ``PERFMODEL_MAX_FILE_BYTES`` (a whole number of bytes) replaces both defaults; a reader's
  ``max_bytes=`` argument beats both. The variable is read when a file is read, never at import;
* JSON is parsed **without recursion limits and without touching process state**: :func:`loads_json`
  runs :func:`json.loads` (the C parser) and, only when the nesting is deeper than the interpreter's
  recursion limit allows, an iterative parser of the same grammar (same values, same extensions:
  ``NaN``, ``Infinity``). ``sys.setrecursionlimit`` and ``threading.stack_size`` are never called.

Writing (:func:`write_atomic`): the data goes to a temporary file in the target's folder, then
:func:`os.replace` (or a no-clobber hard link) puts it in place, so a failure leaves the old file
intact and no half-written one. An existing file is replaced only with ``force=True``; a path that is
one of the ``inputs`` is refused even then; a missing folder is an error, never created silently.
``"-"`` (also ``/dev/stdout``) writes to standard output, which is never read first.

Errors: :class:`~perfmodel.errors.FileRefusedError` (an ``OSError``) for refused files. Echoed input
in any message is cut to :data:`ECHO_CHARS` characters with ``…`` (:func:`short`, :func:`short_repr`).
"""

from __future__ import annotations

import math
import os
import re
import reprlib
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import FileRefusedError

__all__ = [
    "CALIBRATIONS",
    "DATA_MAX_BYTES",
    "ECHO_CHARS",
    "MAX_FILE_BYTES_ENV",
    "PROFILE_MAX_BYTES",
    "STDOUT_NAMES",
    "check_output",
    "gzip_bytes",
    "is_stdout",
    "load_json",
    "loads_json",
    "max_file_bytes",
    "read_bytes",
    "read_text",
    "short",
    "short_repr",
    "write_atomic",
]

#: the folder of the calibration files shipped with perfmodel (``.json`` and ``.json.gz`` data, read on first use;
#: the raw sweeps they were fitted on are not shipped: the repository keeps them under ``benchmarks/data/``)
CALIBRATIONS = Path(__file__).resolve().parent / "calibrations"

#: Default size limit of a Proton profile, bytes (1 GiB: ~5 million kernel nodes; a 100 000-kernel
#: profile is ~21 MB). Parsing needs several times the file size in memory.
PROFILE_MAX_BYTES = 1 << 30
#: Default size limit of a calibration, bench dataset or log metadata file, bytes (64 MiB; the
#: largest committed dataset is ~5 MB, a calibration ~20 kB, the tile trees ~5.3 MB once decompressed).
DATA_MAX_BYTES = 64 << 20
#: Environment variable that replaces both default limits (a whole number of bytes, > 0).
MAX_FILE_BYTES_ENV = "PERFMODEL_MAX_FILE_BYTES"
#: Output names that mean standard output (written directly, never read or replaced).
STDOUT_NAMES = frozenset({"-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"})
#: Longest piece of file content echoed in an error message, characters.
ECHO_CHARS = 200


# -------------------------------------------------------------------------------------------------
# messages
# -------------------------------------------------------------------------------------------------
def short(text: object, limit: int = ECHO_CHARS) -> str:
    """``str(text)`` cut to ``limit`` characters, ending in ``…`` when cut."""
    text = text if isinstance(text, str) else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_REPR = reprlib.Repr()
_REPR.maxlevel = 3  # nesting shown; deeper levels print as [...] (never recurses far)
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = ECHO_CHARS
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = _REPR.maxset = 6


def short_repr(value: object, limit: int = ECHO_CHARS) -> str:
    """A ``repr`` of a parsed value for error messages: bounded depth and length, never recursive."""
    try:
        text = _REPR.repr(value)
    except Exception:  # a hostile __repr__; parsed JSON never has one
        text = f"<{type(value).__name__}>"
    return short(text, limit)


# -------------------------------------------------------------------------------------------------
# reading
# -------------------------------------------------------------------------------------------------
def max_file_bytes(default: int, override: int | None = None) -> int:
    """The size limit in force: ``override`` if given, else ``$PERFMODEL_MAX_FILE_BYTES``, else ``default``.

    Raises:
        FileRefusedError: the override or the variable is not a whole number of bytes > 0.
    """
    if override is not None:
        if isinstance(override, bool) or not isinstance(override, int) or override <= 0:
            raise FileRefusedError(f"max_bytes must be a whole number of bytes > 0, got {short_repr(override)}")
        return override
    raw = os.environ.get(MAX_FILE_BYTES_ENV)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise FileRefusedError(
            f"{MAX_FILE_BYTES_ENV}={short(repr(raw))} is not a whole number of bytes > 0; "
            f"e.g. {MAX_FILE_BYTES_ENV}={2 * PROFILE_MAX_BYTES} for 2 GiB, or unset it for the defaults"
        )
    return value


def _name(path: str | os.PathLike[str]) -> str:
    name = os.fspath(path)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if "\0" in name:
        raise FileRefusedError(f"{short(repr(name))}: a path with a NUL character names no file")
    return name


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _mib(n: int) -> str:
    if n < 2**20:
        return f"{n / 2**10:.1f} KiB"
    return f"{n / 2**20:.1f} MiB" if n < 2**30 else f"{n / 2**30:.2f} GiB"


def read_bytes(
    path: str | os.PathLike[str],
    *,
    what: str,
    limit_bytes: int | None = None,
    default_limit_bytes: int = DATA_MAX_BYTES,
) -> bytes:
    """The bytes of a regular file of at most the size limit (see :func:`max_file_bytes`).

    ``what`` names the file's role in messages ("profile", "calibration", ...).

    Raises:
        FileRefusedError: not a regular file (FIFO, device, folder, socket: refused at once, never
            blocks), or larger than the limit (the message names the file, its size and the limit).
        OSError: the file cannot be opened (missing, permission): the caller words that error.
    """
    limit = max_file_bytes(default_limit_bytes, limit_bytes)
    name = _name(path)
    st = os.stat(name)  # a device or FIFO is refused without even being opened
    if stat.S_ISREG(st.st_mode):
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(name, flags)  # non-blocking: should it have become a FIFO meanwhile, no wait either
        try:
            st = os.fstat(fd)  # what was opened is what is checked
        except BaseException:
            os.close(fd)
            raise
    else:
        fd = -1
    hint = f"set {MAX_FILE_BYTES_ENV}=<bytes> (or pass max_bytes=) if the file is genuine"
    if not stat.S_ISREG(st.st_mode):
        if fd >= 0:
            os.close(fd)
        raise FileRefusedError(
            f"{name}: {_kind(st.st_mode)}, not a regular file; perfmodel reads only regular files (a pipe "
            f"or device can block or never end): save the {what} to a file first."
        )
    if st.st_size > limit:
        os.close(fd)
        raise FileRefusedError(
            f"{name}: {st.st_size} bytes ({_mib(st.st_size)}), above the {limit}-byte ({_mib(limit)}) "
            f"limit for a {what} file; {hint}"
        )
    with open(fd, "rb", closefd=True) as f:
        data = f.read(limit + 1)  # a file that grows while read is still bounded
    if len(data) > limit:
        raise FileRefusedError(f"{name}: more than {limit} bytes ({_mib(limit)}), the limit for a {what} file; {hint}")
    return data


def read_text(
    path: str | os.PathLike[str],
    *,
    what: str,
    limit_bytes: int | None = None,
    default_limit_bytes: int = DATA_MAX_BYTES,
) -> str:
    """:func:`read_bytes` decoded as UTF-8 (``UnicodeDecodeError``, a ``ValueError``, if it is not); a name ending in
    ``.gz`` is gunzipped first, its decompressed size bounded by the same limit (``gzip.BadGzipFile``, an
    ``OSError``, if it is not gzip)."""
    data = read_bytes(path, what=what, limit_bytes=limit_bytes, default_limit_bytes=default_limit_bytes)
    if os.fspath(path).endswith(".gz"):
        import gzip
        import io

        limit = max_file_bytes(default_limit_bytes, limit_bytes)
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise FileRefusedError(
                f"{_name(path)}: more than {limit} bytes ({_mib(limit)}) once decompressed, the limit for a {what} "
                f"file; set {MAX_FILE_BYTES_ENV}=<bytes> (or pass max_bytes=) if the file is genuine"
            )
    return data.decode()


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")  # json.scanner.NUMBER_RE
_CONSTANTS = (
    ("null", None),
    ("true", True),
    ("false", False),
    ("NaN", math.nan),
    ("Infinity", math.inf),
    ("-Infinity", -math.inf),
)


def loads_json(text: str) -> Any:
    """:func:`json.loads`, for any nesting depth, without recursion and without changing process state.

    The C parser runs first (fast); when it runs out of recursion (nesting deeper than about
    ``sys.getrecursionlimit()``), :func:`_loads_iterative` parses the same text with an explicit stack.

    Raises:
        json.JSONDecodeError: invalid JSON (a ``ValueError``).
        ValueError: an integer with more digits than ``sys.get_int_max_str_digits()``.
    """
    import json

    if sys.version_info < (3, 12) and sys.getrecursionlimit() > 20_000:
        # Python 3.11's C parser is bounded only by the recursion limit, which was raised: it could
        # overflow the C stack on deep input, so parse iteratively (3.12+ bound C recursion themselves).
        return _loads_iterative(text)
    try:
        return json.loads(text)
    except RecursionError:
        return _loads_iterative(text)


def _loads_iterative(s: str) -> Any:
    """JSON text -> value like :func:`json.loads` (same grammar and extensions), with an explicit stack.

    Strings go through :func:`json.decoder.scanstring` (C), numbers through json's number pattern
    (``int`` for integers, ``float`` otherwise); duplicate keys keep the last value.
    """
    import json
    from json.decoder import JSONDecodeError

    if s.startswith("\ufeff"):
        raise JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", s, 0)
    scanstring = json.decoder.scanstring
    ws = _WS.match
    number = _NUMBER.match
    stack: list[list[Any]] = []  # [container, pending key] per open object or array
    end = ws(s, 0).end()
    while True:
        # -- a value starts at `end` --
        c = s[end : end + 1]
        if c == '"':
            value, end = scanstring(s, end + 1)
        elif c == "{":
            end = ws(s, end + 1).end()
            if s[end : end + 1] == "}":
                value, end = {}, end + 1
            else:
                key, end = _key(s, end, scanstring, ws)
                stack.append([{}, key])
                continue
        elif c == "[":
            end = ws(s, end + 1).end()
            if s[end : end + 1] == "]":
                value, end = [], end + 1
            else:
                stack.append([[], None])
                continue
        else:
            m = number(s, end)
            if m is not None:
                integer, frac, exp = m.groups()
                value = float(integer + (frac or "") + (exp or "")) if frac or exp else int(integer)
                end = m.end()
            else:
                for word, constant in _CONSTANTS:
                    if s.startswith(word, end):
                        value, end = constant, end + len(word)
                        break
                else:
                    raise JSONDecodeError("Expecting value", s, end)
        # -- a value is complete: store it, then close containers or go on to the next value --
        while True:
            if not stack:
                end = ws(s, end).end()
                if end != len(s):
                    raise JSONDecodeError("Extra data", s, end)
                return value
            top = stack[-1]
            container = top[0]
            is_object = type(container) is dict
            if is_object:
                container[top[1]] = value
            else:
                container.append(value)
            end = ws(s, end).end()
            c = s[end : end + 1]
            if c == ",":
                end = ws(s, end + 1).end()
                if is_object:
                    top[1], end = _key(s, end, scanstring, ws)
                break
            if c == ("}" if is_object else "]"):
                stack.pop()
                value, end = container, end + 1
                continue
            raise JSONDecodeError("Expecting ',' delimiter", s, end)


def _key(s: str, end: int, scanstring: Any, ws: Any) -> tuple[str, int]:
    """An object key at ``end`` and the ':' after it; returns the key and where its value starts."""
    if s[end : end + 1] != '"':
        from json.decoder import JSONDecodeError

        raise JSONDecodeError("Expecting property name enclosed in double quotes", s, end)
    key, end = scanstring(s, end + 1)
    end = ws(s, end).end()
    if s[end : end + 1] != ":":
        from json.decoder import JSONDecodeError

        raise JSONDecodeError("Expecting ':' delimiter", s, end)
    return key, ws(s, end + 1).end()


def load_json(
    path: str | os.PathLike[str],
    *,
    what: str,
    error: type[Exception],
    limit_bytes: int | None = None,
    default_limit_bytes: int = DATA_MAX_BYTES,
) -> Any:
    """Read and parse a JSON file; every problem is an ``error`` (or a :class:`FileRefusedError`)
    whose message starts with the file name.

    Raises:
        FileRefusedError: not a regular file, or above the size limit.
        error: the file cannot be opened, is not UTF-8, is not JSON, or does not fit in memory.
    """
    from json.decoder import JSONDecodeError

    name = os.fspath(path)
    try:
        text = read_text(name, what=what, limit_bytes=limit_bytes, default_limit_bytes=default_limit_bytes)
    except FileRefusedError:
        raise
    except OSError as exc:
        raise error(f"{name}: cannot read the {what} ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise error(f"{name}: not a UTF-8 JSON {what} ({exc.reason} at byte {exc.start})") from None
    try:
        return loads_json(text)
    except JSONDecodeError as exc:
        hint = " (the file looks truncated)" if exc.pos >= len(text.rstrip()) else ""
        raise error(f"{name}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}{hint}") from None
    except ValueError as exc:  # e.g. an integer longer than sys.get_int_max_str_digits()
        raise error(f"{name}: not a valid JSON {what} ({short(exc)})") from None
    except MemoryError:
        raise error(f"{name}: out of memory parsing the {what} ({len(text)} characters)") from None


# -------------------------------------------------------------------------------------------------
# writing
# -------------------------------------------------------------------------------------------------
def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzip-compressed at level 9 with no file name and a zero time stamp, so that the same data always
    gives the same bytes (what :func:`read_text` reads back from a name ending in ``.gz``)."""
    import gzip

    return gzip.compress(data, compresslevel=9, mtime=0)


def is_stdout(path: str | os.PathLike[str]) -> bool:
    """True for ``"-"`` and the names of standard output (:data:`STDOUT_NAMES`)."""
    return os.fspath(path) in STDOUT_NAMES


def _same_file(a: str, b: str) -> bool:
    try:
        try:
            return os.path.samefile(a, b)
        except OSError:  # one of them does not exist (yet): compare the resolved names
            return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))
    except (OSError, ValueError):  # e.g. an embedded NUL, a symlink loop
        return False


def check_output(path: str | os.PathLike[str], *, force: bool, inputs: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """Check that :func:`write_atomic` may write ``path`` (call it before long work); returns the
    file that would be written (symbolic links resolved), or ``Path("-")``-like names for stdout.

    Raises:
        FileRefusedError: ``path`` is one of ``inputs``; its folder does not exist; it exists and is
            not a regular file; it exists and ``force`` is false.
    """
    name = _name(path)
    if name in STDOUT_NAMES:
        return Path(name)
    if not name:
        raise FileRefusedError("the output path is empty; name a file, or '-' for standard output")
    for source in inputs:
        source = os.fspath(source)
        if source not in STDOUT_NAMES and _same_file(name, source):
            raise FileRefusedError(
                f"{name}: this is the input {source}; writing it would destroy the input. Choose another output path."
            )
    target = Path(os.path.realpath(name)) if os.path.islink(name) else Path(name)
    folder = target.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise FileRefusedError(
            f"{name}: the folder {str(folder)!r} {what}; perfmodel does not create folders. "
            f"Create it first (mkdir -p {folder}) or choose another path."
        )
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise FileRefusedError(f"{name}: cannot check the output ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileRefusedError(
            f"{name}: exists and is {_kind(st.st_mode)}, not a regular file; not replacing it. "
            "Write to a regular file, or to '-' for standard output."
        )
    if not force:
        raise FileRefusedError(
            f"{name}: exists; not overwriting it. Pass force=True (--force on the command line) or choose another path."
        )
    return target


def _umask() -> int:
    """The process umask, read without changing it (``os.umask`` sets it): Linux /proc, else 0o022."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def write_atomic(
    path: str | os.PathLike[str],
    data: str | bytes,
    *,
    force: bool,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> Path:
    """Write ``data`` (``str`` as UTF-8, or ``bytes``) to ``path`` all at once; returns the path written.

    ``"-"`` or ``/dev/stdout`` (:data:`STDOUT_NAMES`) write to standard output (never read, never
    replaced) and return ``Path(path)``. A file is written to a temporary file in the same folder
    (flushed and synced) and moved into place: an error leaves the old file as it was and no
    temporary behind. A new file gets mode ``0o666 & ~umask``; a replaced one keeps its mode. A
    symbolic link is followed (the file it names is replaced, the link stays).

    Raises:
        FileRefusedError: see :func:`check_output` (exists without ``force``, one of ``inputs``,
            missing folder, not a regular file), or a new file appeared meanwhile (without ``force``).
        OSError: the write itself failed (disk full, permission): nothing was replaced.
    """
    payload = data.encode() if isinstance(data, str) else bytes(data)
    target = check_output(path, force=force, inputs=inputs)
    if os.fspath(path) in STDOUT_NAMES:
        stream = sys.stdout
        buffer = getattr(stream, "buffer", None)
        stream.flush()
        if buffer is not None:
            buffer.write(payload)
            buffer.flush()
        else:  # a text-only stream (e.g. captured): text data only
            stream.write(payload.decode() if isinstance(data, str) else data.decode("latin-1"))
            stream.flush()
        return Path(os.fspath(path))
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
        existed = True
    except FileNotFoundError:
        mode, existed = 0o666 & ~_umask(), False
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with open(fd, "wb", closefd=True) as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        if existed or force:
            os.replace(tmp, target)
        else:
            _link_new(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target


def _link_new(tmp: str, target: Path) -> None:
    """Put ``tmp`` at ``target`` only if nothing is there (a hard link fails on an existing name)."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise FileRefusedError(
            f"{target}: a file of that name appeared while writing; not overwriting it. Pass force=True."
        ) from None
    except OSError:  # no hard links on this file system: check, then rename (a small race remains)
        if os.path.lexists(target):
            raise FileRefusedError(f"{target}: exists; not overwriting it. Pass force=True.") from None
        os.replace(tmp, target)
        return
    os.unlink(tmp)
