"""Every file a command reads or writes: declared before any work, checked, written atomically.

A command declares its paths through the argparse types below: `input_file`
and `input_table` for what it reads, `output_file` and `output_folder` (with
the names it will write inside) for what it writes. Before the command runs,
`bayes-wsc` checks them all (`Paths.check`):

* no output is an input: not the same path, nor a hard or symbolic link to
  it (compared by device and inode, and by resolved path);
* no two outputs are the same file;
* the disk of every output has room: at least 1 MB free, or as much as the
  files it replaces (a full disk fails before the work, not after it);
* every output can be written: its folder exists or can be created and is
  writable, an existing output file is a regular file (not a folder, a
  device such as /dev/null, a named pipe, or a link to /dev/stdout: a writer
  renames a new file onto the path, which would replace the device or the
  link) and not read-only, an existing output folder is a folder.

So a bad output path fails in a second, not after the fit. While the command
runs, the writers refuse to replace any of its inputs (`guard`), a last
line of defence for paths that were not declared.

The writers (`write_file` and the helpers built on it) write to a temporary
file in the target's folder and rename it into place: an existing output is
replaced atomically, and an interrupted write leaves the old file (or none),
never half a file; a killed command's temporary file is removed by the next
write to the same path. New files get the permissions of any new file, 0666 less
the umask (0644 under the usual umask of 022), not the 0600 of `mkstemp`; a
file that is replaced keeps its permission bits (a 0600 fit stays 0600).
A failure names the user's path, never the temporary file.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import glob
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bayes_wsc.errors import InputError


class DeclaredPath(str):
    """A path given on the command line, with what it is: an input or an output, a file or a folder.

    It is a `str`, so commands use it as any path; `Paths.of(args)` collects them and
    turns them back into plain strings.
    """

    role: str = "input"  # "input" or "output"
    what: str = "file"  # how messages name it: "fit file", "clicks", "report folder"
    kind: str = "file"  # "file", "source" (a file, a folder of Parquet files or a glob) or "folder"
    contents: tuple[str, ...] = ()  # an output folder: the names (glob patterns) written in it


def _declare(role: str, what: str, kind: str, contents: tuple[str, ...] = ()):
    def parse(text: str) -> DeclaredPath:
        if not text.strip():
            import argparse

            raise argparse.ArgumentTypeError(f"expected a path for the {what}, got an empty string")
        path = DeclaredPath(text)
        path.role, path.what, path.kind, path.contents = role, what, kind, tuple(contents)
        return path

    parse.__name__ = what  # argparse names the type in its messages
    parse.role, parse.kind, parse.contents = role, kind, tuple(contents)  # what a test of the parser can see
    return parse


def input_file(what: str):
    """An argparse type: a file the command reads (a fit, a model file)."""
    return _declare("input", what, "file")


def input_table(what: str, *, source: bool = False):
    """An argparse type: a CSV or Parquet table the command reads; `source=True` also allows a
    folder or a glob of Parquet files (streamed clicks)."""
    return _declare("input", what, "source" if source else "file")


def output_file(what: str):
    """An argparse type: a file the command writes (a fit, predictions)."""
    return _declare("output", what, "file")


def output_folder(what: str, contents: Iterable[str]):
    """An argparse type: a folder the command writes into, and the names (glob patterns) it writes."""
    return _declare("output", what, "folder", tuple(contents))


#: what an `--report DIR` folder holds
REPORT_CONTENTS = ("report.html",)


# ---------------------------------------------------------------------- checking before the work
@dataclass
class Paths:
    """The declared inputs and outputs of one command."""

    inputs: list[DeclaredPath] = field(default_factory=list)
    outputs: list[DeclaredPath] = field(default_factory=list)

    @classmethod
    def of(cls, args) -> Paths:
        """The paths in an argparse namespace: every declared path, and any other text argument that
        names an existing file (an input nobody declared is still protected). Declared paths in
        `args` become plain strings."""
        paths = cls()
        for name, value in vars(args).items():
            values = value if isinstance(value, list) else [value]
            for item in values:
                if isinstance(item, DeclaredPath):
                    (paths.inputs if item.role == "input" else paths.outputs).append(item)
                elif isinstance(item, str) and name not in ("command", "model") and _is_file(item):
                    what = name.replace("_", " ")
                    paths.inputs.append(input_file(what if what.endswith("file") else f"{what} file")(item))
            if isinstance(value, DeclaredPath):
                setattr(args, name, str(value))
            elif isinstance(value, list) and any(isinstance(v, DeclaredPath) for v in value):
                setattr(args, name, [str(v) if isinstance(v, DeclaredPath) else v for v in value])
        return paths

    def input_files(self) -> list[tuple[DeclaredPath, Path]]:
        """Every existing input file, with the declared path it came from (a folder or glob of
        Parquet files gives each of its files)."""
        out = []
        for declared in self.inputs:
            for path in _expand(declared):
                if _is_file(path):
                    out.append((declared, Path(path)))
        return out

    def check(self) -> None:
        """Refuse inputs that are not regular files (or folders where a folder is read), and outputs
        that alias an input or each other, or that cannot be written."""
        for declared in self.inputs:
            if declared.kind == "source" and os.path.isdir(str(declared)):
                continue
            special = not_a_regular_file(declared) or ("a directory" if os.path.isdir(str(declared)) else None)
            if special:
                raise InputError(f"cannot read the {declared.what} {str(declared)!r}: it is {special}, not a regular "
                                 "file")
        files = self.input_files()
        by_identity = {}
        for declared, path in files:
            identity = _identity(path)
            if identity is not None:
                by_identity.setdefault(identity, (declared, path))
        resolved = {_resolved(path): (declared, path) for declared, path in files}
        for out in self.outputs:
            for target in _targets(out):
                clash = by_identity.get(_identity(target)) or resolved.get(_resolved(target))
                if clash is None and out.kind == "folder":
                    clash = _pattern_clash(out, files)
                if clash is not None:
                    declared, path = clash
                    same = "is" if os.path.abspath(target) == os.path.abspath(path) else "is a link to"
                    raise InputError(f"the {out.what} {str(out)!r} {same} the {declared.what} {str(path)!r}, "
                                     "which it would replace; choose another output path")
        self._check_outputs_distinct()
        for out in self.outputs:
            check_writable(out)
        self._check_free_space()

    def _check_free_space(self) -> None:
        """A disk that is already full fails now, not after the work: each output needs
        `MIN_FREE_BYTES`, or the size of the files it replaces if larger (a fit replacing one of
        the same data is about as big), on the disk that will hold it."""
        need: dict[int, list] = {}
        for out in self.outputs:
            folder = _existing_folder(Path(out) if out.kind == "folder" else Path(out).parent)
            try:
                device = os.stat(folder).st_dev
            except OSError:
                continue
            size = sum(_file_size(target) for target in _targets(out))
            entry = need.setdefault(device, [out, folder, 0])
            entry[2] += max(MIN_FREE_BYTES, size)
        for out, folder, wanted in need.values():
            free = free_bytes(folder)
            if free is not None and free < wanted:
                raise InputError(f"cannot write the {out.what} {str(out)!r}: the disk holding {str(folder)!r} has "
                                 f"{_size(free)} free, and this command's outputs need at least {_size(wanted)}; "
                                 "free some space or choose another folder")

    def _check_outputs_distinct(self) -> None:
        files = [o for o in self.outputs if o.kind != "folder"]
        folders = [o for o in self.outputs if o.kind == "folder"]
        for i, a in enumerate(files):
            for b in files[i + 1:]:
                if _resolved(a) == _resolved(b):
                    raise InputError(f"the {a.what} and the {b.what} are the same file {str(a)!r}; give two paths")
            for folder in folders:
                inside = os.path.dirname(_resolved(a)) == _resolved(folder)
                if _resolved(a) == _resolved(folder) or (
                        inside and any(fnmatch.fnmatch(Path(a).name, p) for p in folder.contents)):
                    raise InputError(f"the {a.what} {str(a)!r} would be replaced by the {folder.what} "
                                     f"{str(folder)!r}; give two separate paths")

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """While the command runs, no writer of this module replaces one of its input files."""
        previous = _PROTECTED.copy()
        for _, path in self.input_files():
            identity = _identity(path)
            if identity is not None:
                _PROTECTED[identity] = str(path)
        try:
            yield
        finally:
            _PROTECTED.clear()
            _PROTECTED.update(previous)


#: (device, inode) -> path of the input files that the running command must not replace
_PROTECTED: dict[tuple[int, int], str] = {}


def check_writable(out: DeclaredPath) -> None:
    """An output that can be written: see the module docstring. Fails naming the user's path."""
    path = Path(out)
    where = f"{out.what} {str(out)!r}"
    _check_name_length(path if out.kind == "file" else path / "x", where)  # before any stat, which fails on it
    if out.kind == "folder":
        if path.exists() and not path.is_dir():
            raise InputError(f"cannot write the {where}: it is a file, not a folder")
        for name in out.contents:
            inside = path / name
            if not glob.has_magic(name) and inside.is_dir():
                raise InputError(f"cannot write the {where}: {str(inside)!r} is a folder")
        for target in _targets(out):
            special = not_a_regular_file(target)
            if special:
                raise InputError(f"cannot write the {where}: {target!r} is {special}, not a regular file")
        folder = path
        for name in out.contents:
            if not glob.has_magic(name):
                _check_name_length(path / name, where)
    else:
        if path.is_dir():
            raise InputError(f"cannot write the {where}: it is a folder; give a file name")
        special = not_a_regular_file(path)
        if special:
            raise InputError(f"cannot write the {where}: it is {special}, not a regular file; give a file name")
        if path.exists() and not os.access(path, os.W_OK):
            raise InputError(f"cannot write the {where}: the file exists and is read-only")
        folder = path.parent
    _check_folder(folder, where)


def _check_name_length(path: Path, where: str) -> None:
    """Every name on the path, and the temporary name a writer first writes (`_new_temporary`, 14 bytes
    longer), within the file system's longest name: refused now, not after the work."""
    existing = _existing_folder(path.parent)
    try:
        longest = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        longest = 255
    for name in path.parts:
        if len(os.fsencode(name)) > longest:
            raise InputError(f"cannot write the {where}: the name {name[:40]!r}... is {len(os.fsencode(name))} bytes, "
                             f"longer than the {longest} the file system holds")
    temporary = len(os.fsencode(_temporary_name(path)))
    if temporary > longest:
        raise InputError(f"cannot write the {where}: its name is {len(os.fsencode(path.name))} bytes, and the "
                         f"temporary file written first ({temporary} bytes) would be longer than the {longest} the "
                         f"file system holds; give a name of at most {longest - (temporary - len(os.fsencode(path.name)))} "
                         "bytes")


def not_a_regular_file(path) -> str | None:
    """What an existing output path is when it is neither a regular file nor a folder (a device, a
    named pipe, a socket, a link to a file descriptor such as /dev/stdout), or None.

    A writer renames a new regular file onto the path: onto /dev/null (as root) that would
    replace the device itself, and onto a link to /dev/stdout the link, never the stream.
    """
    text = str(path)
    hop = text
    for _ in range(40):  # follow the links one hop at a time: /dev/stdout -> /proc/self/fd/1
        try:
            target = os.readlink(hop)
        except (OSError, ValueError):
            break
        hop = os.path.normpath(os.path.join(os.path.dirname(hop), target))
        if hop.startswith(("/proc/", "/dev/fd/")) and "/fd/" in hop + "/":
            return f"a link to the file descriptor {hop!r}"
    try:
        st = os.stat(text)
    except (OSError, ValueError):
        return None  # a new path (or a dangling link, which the writer replaces)
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None
    kinds = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))
    kind = next((name for test, name in kinds if test(st.st_mode)), "a special file")
    return f"a link to {os.path.realpath(text)!r}, {kind}" if os.path.islink(text) else kind


#: the least free space an output needs on its disk before a command starts (see `Paths.check`):
#: the smallest fit or report is 0.1-0.3 MB
MIN_FREE_BYTES = 2**20


def free_bytes(folder) -> int | None:
    """Bytes this process may still write on the disk holding `folder` (root may use the blocks
    reserved for it), or None when the file system does not say."""
    try:
        st = os.statvfs(folder)
    except (OSError, AttributeError, ValueError):
        return None
    if not st.f_blocks:  # a file system without a size (some virtual ones)
        return None
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    return blocks * st.f_frsize


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 1024:.0f} KB"


def _file_size(path) -> int:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def _existing_folder(folder: Path) -> Path:
    """The folder itself, or its nearest ancestor that exists (a path the system cannot even look up, a name
    longer than the file system holds, does not exist)."""
    existing = folder if str(folder) else Path(".")
    while not _exists(existing) and existing != existing.parent:
        existing = existing.parent
    return existing


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False


def _check_folder(folder: Path, where: str) -> None:
    """A folder that exists and takes a new file (tried), or that can be created."""
    existing = folder if str(folder) else Path(".")
    while not existing.exists():
        if existing.is_symlink():  # a dangling link
            raise InputError(f"cannot write the {where}: {str(existing)!r} is a broken link")
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"cannot write the {where}: {str(existing)!r} is a file, not a folder")
    if existing != folder and str(folder):
        if not os.access(existing, os.W_OK | os.X_OK):
            raise InputError(f"cannot write the {where}: cannot create a folder in {str(existing)!r} "
                             "(permission denied)")
        return
    try:
        remove_stale_temporaries(existing / "probe")
        probe = _new_temporary(existing / "probe")
    except OSError as exc:
        raise InputError(f"cannot write the {where}: {_reason(exc)} (in folder {str(existing)!r})") from None
    os.unlink(probe)


# ---------------------------------------------------------------------- writing
def write_file(path: str | os.PathLike, write: Callable[[str], None], what: str = "file") -> Path:
    """Write `path` atomically: `write(temporary)` fills a new file in the same folder (keeping its
    permissions, 0666 less the umask, or those of the file it replaces), which is then renamed
    onto `path`."""
    path = Path(path)
    tmp = keep = None
    created: list[Path] = []
    try:
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        special = not_a_regular_file(path)
        if special:  # a last line of defence for paths no command declared
            raise InputError(f"cannot write the {what} {str(path)!r}: it is {special}, not a regular file")
        identity = _identity(path)
        if identity in _PROTECTED:
            raise InputError(f"the {what} {str(path)!r} is the input file {_PROTECTED[identity]!r}, "
                             "which it would replace; choose another output path")
        keep = _existing_mode(path)
        missing = path.parent
        while not missing.exists() and missing != missing.parent:  # removed again if the write fails
            created.append(missing)
            missing = missing.parent
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path)
        tmp = _new_temporary(path)
        if keep is not None:  # before anything is written: a private file's contents stay private
            os.chmod(tmp, keep)
        write(tmp)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        unchanged = "; the old file is unchanged" if keep is not None else ""
        raise InputError(f"cannot write the {what} {str(path)!r}: {_reason(exc)}{unchanged}") from None
    finally:
        if tmp is not None:  # the write failed
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if not path.exists():
            for folder in created:  # deepest first, each only if still empty
                with contextlib.suppress(OSError):
                    folder.rmdir()
    return path


def write_text(path, text: str, what: str = "file") -> Path:
    def write(tmp):
        with open(tmp, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)

    return write_file(path, write, what)


def write_bytes(path, data: bytes, what: str = "file") -> Path:
    return write_file(path, lambda tmp: Path(tmp).write_bytes(data), what)


def write_csv(frame, path, what: str = "table") -> Path:
    """A DataFrame as CSV, without its index."""
    return write_file(path, lambda tmp: _repeats_as_text(frame).to_csv(tmp, index=False), what)


def _repeats_as_text(frame):
    """`frame` (not copied) with each float column whose values repeat (wsc's predictions: one value per group and
    bin, on each of its rows; 7,500 values on 50,000 rows) as the text `to_csv` writes for it, each distinct value
    formatted once: the same file, without formatting a float per row (0.17 of 0.23 s there). The text is pandas'
    own (`astype(str)`, and `na_rep`'s empty field for NaN: `pandas.Index._get_values_for_csv`)."""
    import numpy as np
    import pandas as pd

    out = None
    for at in range(frame.shape[1]):
        column = frame.iloc[:, at]
        if column.dtype.kind != "f" or not isinstance(column.dtype, np.dtype) or len(column) < 1000:
            continue
        codes, values = pd.factorize(column.to_numpy())
        if 2 * len(values) > len(column):
            continue
        out = frame.copy(deep=False) if out is None else out
        out.isetitem(at, np.append(values.astype(str).astype(object), "")[codes])  # code -1: NaN
    return frame if out is None else out


def write_json(obj, path, what: str = "file") -> Path:
    return write_text(path, json.dumps(obj, indent=2, default=str) + "\n", what)


def write_figure(fig, path, what: str = "figure", **savefig_kw) -> Path:
    """A matplotlib figure, in the format of the path's suffix (PNG when it has none)."""
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    return write_file(path, lambda tmp: fig.savefig(tmp, format=fmt, **savefig_kw), what)


def _existing_mode(path: Path) -> int | None:
    """The permission bits of the regular file a writer replaces, or None for a new path."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


#: when this process started (as near as the module knows): a temporary file older than this is not
#: being written by it
_STARTED = time.time()


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove the temporary files a killed writer left beside `path`: only regular files named as
    `_new_temporary` names them for this path (`.NAME.<8 hex digits>.tmp`) and last modified before
    this process started (a write in progress in this process, or one that another process began
    since, is newer). Returns what was removed."""
    path = Path(path)
    own = re.compile(rf"\.{re.escape(path.name)}\.[0-9a-f]{{8}}\.tmp")
    removed = []
    try:
        entries = list(os.scandir(path.parent if str(path.parent) else "."))
    except OSError:
        return removed
    for entry in entries:
        if not own.fullmatch(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_mtime < _STARTED:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def _temporary_name(path: Path, token: str = "0" * 8) -> str:
    """The name of a writer's temporary file for `path` (`remove_stale_temporaries` knows it)."""
    return f".{path.name}.{token}.tmp"


def _new_temporary(path: Path) -> str:
    """Create an empty hidden file beside `path`; open(2) applies the umask to mode 0666."""
    for _ in range(100):
        tmp = path.with_name(_temporary_name(path, secrets.token_hex(4)))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return str(tmp)
    raise FileExistsError(errno.EEXIST, f"no free temporary name beside {str(path)!r}")


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


# ---------------------------------------------------------------------- comparing paths
def _is_file(path) -> bool:
    try:
        return os.path.isfile(path)
    except (OSError, ValueError):  # a name too long, a NUL byte: not a file
        return False


def _identity(path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path` (following links), or None when there is none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _resolved(path) -> str:
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError, ValueError):
        return os.path.abspath(path)


def folder_parts(folder) -> tuple[list[str], list[str]]:
    """(parts, skipped): the Parquet files below a folder that are its parts, and those that are not:
    a file or folder whose name starts with "_" or "." (Spark's `_temporary/`, `_SUCCESS`, a hidden
    `.part-0.parquet`) is skipped, as pyarrow, Dask and Spark skip it."""
    parts, skipped = [], []
    for path in sorted(Path(folder).rglob("*.parquet")):
        names = path.relative_to(folder).parts
        (skipped if any(n.startswith(("_", ".")) for n in names) else parts).append(str(path))
    return parts, skipped


def _expand(declared: DeclaredPath) -> list[str]:
    """The files behind an input: itself, or the Parquet files of a folder or glob."""
    text = str(declared)
    if declared.kind == "source":
        if os.path.isdir(text):
            return folder_parts(text)[0]
        if glob.has_magic(text):
            return sorted(glob.glob(text, recursive=True))
    return [text]


def _targets(out: DeclaredPath) -> list[str]:
    """The files an output may write that exist now (or the path itself for a file)."""
    if out.kind != "folder":
        return [str(out)]
    targets = []
    for name in out.contents:
        pattern = os.path.join(glob.escape(str(out)), name)
        targets += glob.glob(pattern) if glob.has_magic(name) else [os.path.join(str(out), name)]
    return targets


def _pattern_clash(out: DeclaredPath, files) -> tuple[DeclaredPath, Path] | None:
    """An input that lies in an output folder under a name the command writes there."""
    folder = _resolved(out)
    for declared, path in files:
        resolved = Path(_resolved(path))
        if str(resolved.parent) == folder and any(fnmatch.fnmatch(resolved.name, p) for p in out.contents):
            return declared, path
    return None
