"""Where `gpufleet synth --out` may write, and how a tree replaces the one there (never anything else).

Why, with sources: docs/synth-tree.md, "Design notes", gpufleet/tree/output.py.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from gpufleet.base.inputs import NAME_MAX, name_problem
from gpufleet.base.interrupts import defer_signals, raise_interrupt, signals_deferred
from gpufleet.tree.read import tree_problem
from gpufleet.tree.write import Tree

_STAGING_INFIX = ".gpufleet-staging-"
MARKER = ".gpufleet-staging"  # in a staging directory: "<what it is> <the target's absolute path>"
_MARKER_TEXT = "gpufleet synth staging directory for "


class TargetRefused(Exception):
    """The --out target is not one gpufleet may write; the message says why."""


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def _refusal(target: Path, spec: Path | None) -> str | None:
    """Why `target` must not be replaced, or None when it is absent, empty or a tree gpufleet wrote."""
    if target.is_symlink():
        return "a symbolic link; give the directory it points to, or a new one"
    if not target.exists():
        return None
    if not target.is_dir():
        return "not a directory"
    resolved = target.resolve()
    if spec is not None and _inside(spec.resolve(), resolved):
        return f"holds the spec {spec}; write the tree to a directory of its own"
    if _inside(Path.cwd().resolve(), resolved):
        return "the working directory or one of its parents"
    if os.path.ismount(resolved):
        return "a mount point"
    if not any(resolved.iterdir()):
        return None
    problem = tree_problem(resolved)
    if problem is not None:
        return f"not empty and not a tree gpufleet wrote ({problem}); give a new or empty directory"
    return None


@dataclass(slots=True)
class Staging:
    """A staging directory beside the target, to be committed into it or discarded."""

    target: Path
    directory: Path
    spec: Path | None
    created: list[Path] = field(default_factory=list)  # parents prepare() made, outermost first
    marker_fd: int | None = None  # the open marker, locked while this process runs

    def commit(self, tree: Tree, *, keep_deferred: bool = False) -> None:
        """Write the tree into staging, then swap it in under the parent's lock; the old tree is removed.

        Why: docs/synth-tree.md, "Design notes", output.Staging.commit."""
        raise_interrupt()
        with contextlib.suppress(FileNotFoundError):
            (self.directory / MARKER).unlink()  # not part of the tree; the lock on the open file holds until the end
        for rel, text in tree.files.items():
            path = self.directory / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        with _locked(self.target.parent), signals_deferred():
            raise_interrupt()  # the last moment a lost Ctrl-C can still keep the tree from being swapped in
            reason = _refusal(self.target, self.spec)  # again: the target may have changed while synthesising
            if reason is not None:
                raise TargetRefused(reason)
            if self.target.exists():
                _exchange(self.directory, self.target)  # staging now holds the old tree
            else:
                os.rename(self.directory, self.target)
            if keep_deferred:
                defer_signals()  # the tree is committed: a signal from now on waits until the run ends
            _remove_stale(self.target)
        shutil.rmtree(self.directory, ignore_errors=True)
        self.created.clear()
        self._release()

    def _release(self) -> None:
        if self.marker_fd is not None:
            os.close(self.marker_fd)
            self.marker_fd = None

    def discard(self) -> None:
        with signals_deferred():  # a second Ctrl-C must not cut the cleanup short
            shutil.rmtree(self.directory, ignore_errors=True)
            for parent in reversed(self.created):
                try:
                    parent.rmdir()
                except OSError:
                    break  # someone else put something there meanwhile: it is theirs now
            self.created.clear()
            self._release()


def prepare(out: str, spec: str | None = None) -> Staging:
    """Check `out` and create its staging directory, proving it writable; raises TargetRefused."""
    if not out:
        raise TargetRefused("an empty path; name a directory")
    too_long = name_problem(out) or name_problem(os.path.abspath(out))
    if too_long is not None:
        raise TargetRefused(too_long)
    absolute = Path(os.path.abspath(out))
    if absolute.parent == absolute:
        raise TargetRefused("the root directory")
    spec_path = Path(spec) if spec is not None else None
    # under the lock: a concurrent writer swapping the tree must not change it while it is inspected
    with _locked(absolute.parent) if absolute.parent.is_dir() else contextlib.nullcontext():
        reason = _refusal(absolute, spec_path)
    if reason is not None:
        raise TargetRefused(reason)
    created: list[Path] = []
    missing = [p for p in reversed(absolute.parents) if not p.exists()]
    directory: Path | None = None
    try:
        for parent in missing:
            parent.mkdir()
            created.append(parent)
        directory = Path(tempfile.mkdtemp(prefix=_staging_prefix(absolute), dir=absolute.parent))
        directory.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would become the tree's mode
        marker_fd = _mark(directory, absolute)
    except OSError as exc:
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
        for parent in reversed(created):
            parent.rmdir()
        where = missing[len(created)].parent if len(created) < len(missing) else absolute.parent
        raise TargetRefused(f"cannot write in {_shown(where)}: {exc.strerror or exc}") from None
    return Staging(target=absolute, directory=directory, spec=spec_path, created=created, marker_fd=marker_fd)


def _mark(directory: Path, target: Path) -> int:
    """Write the staging marker naming `target` and lock it for this process's lifetime; the open descriptor."""
    fd = os.open(directory / MARKER, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, os.fsencode(f"{_MARKER_TEXT}{target}\n"))
    except OSError:
        os.close(fd)
        raise
    return fd


def _remove_stale(target: Path) -> None:
    """Remove the staging directories of `target` that a writer killed before it could clean up left beside it
    (called under the parent's lock): a directory of the staging name whose marker names `target`, and whose marker
    lock is free (its writer is gone).

    Why: docs/synth-tree.md, "Design notes", output._remove_stale."""
    expected = os.fsencode(f"{_MARKER_TEXT}{target}\n")
    for candidate in target.parent.glob(f"*{_STAGING_INFIX}*"):
        if candidate.is_symlink() or not candidate.is_dir():
            continue
        try:
            fd = os.open(candidate / MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue  # no marker: not provably gpufleet's
        try:
            if os.read(fd, len(expected) + 1) != expected:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its writer still runs
            shutil.rmtree(candidate, ignore_errors=True)
        finally:
            os.close(fd)


def _staging_prefix(target: Path) -> str:
    """`.<name>.gpufleet-staging-` (then mkdtemp's 8 random characters), or without the name where that would be
    longer than a name may be: any name the file system allows for the target works."""
    prefix = f".{target.name}{_STAGING_INFIX}"
    return prefix if len(os.fsencode(prefix)) + 8 <= NAME_MAX else _STAGING_INFIX


def _shown(path: Path) -> str:
    """A path as the user would write it: relative to the working directory when it is inside it."""
    relative = os.path.relpath(path)
    return path.as_posix() if relative.startswith("..") else relative


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_tree(tree: Tree, out: str) -> None:
    """Prepare, write and swap in one call (no synthesis in between)."""
    staging = prepare(out)
    try:
        staging.commit(tree)
    except BaseException:
        staging.discard()
        raise


_EXISTS = "exists; gpufleet init never overwrites a file: remove it or name another"


def write_new_file(path: str, text: str) -> None:
    """Write a new file atomically, never over anything that exists (`gpufleet init`); raises TargetRefused.

    Why: docs/synth-tree.md, "Design notes", output.write_new_file."""
    too_long = name_problem(path) or name_problem(os.path.abspath(path))
    if too_long is not None:
        raise TargetRefused(too_long)
    target = Path(os.path.abspath(path))
    if target.is_symlink() or target.exists():
        raise TargetRefused(_EXISTS)
    try:
        fd, staging = tempfile.mkstemp(prefix=_staging_prefix(target), dir=target.parent)
    except OSError as exc:
        raise TargetRefused(f"cannot write in {_shown(target.parent)}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(staging, 0o666 & ~_umask())  # mkstemp's 0600 would become the file's mode
        os.link(staging, target)
    except FileExistsError:
        raise TargetRefused(_EXISTS) from None
    except OSError as exc:  # a full disk, a file system without hard links
        raise TargetRefused(f"cannot write {_shown(target)}: {exc.strerror or exc}") from None
    finally:
        os.unlink(staging)


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)  # glibc >= 2.28; absent on macOS and musl before 1.2.3


def _exchange(a: Path, b: Path) -> None:
    """Swap two directories: atomically where the system can, else by two renames (the lock keeps writers out)."""
    if _renameat2 is not None:
        if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # not "this file system cannot"
            raise OSError(code, os.strerror(code), str(b))
    aside = a.with_name(a.name + ".old")
    os.rename(b, aside)
    os.rename(a, b)
    os.rename(aside, a)
