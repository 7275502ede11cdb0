"""Workspaces: files a run's guest reaches through `workspace` and `node:fs/promises`
(docs/workspace.md), served by this process through libairlock.

    ws = airlock.Workspace({"entries": {"in/a.csv": {"type": "file", "content": "x,y\\n"}},
                            "outputs": ["out/"]})
    r = runner.run("await workspace.writeFile('out/r.md', 'hi')", workspace=ws)
    ws.outputs()   # [{"path": "out/r.md", "data": b"hi", "sha256": "...", ...}]
    ws.tar()       # the workspace as a tar (bytes)
"""
import ctypes
import json

from . import _lib
from .errors import ConfigError


class _File(ctypes.Structure):
    _fields_ = [("path", ctypes.c_char_p), ("data", ctypes.c_void_p), ("len", ctypes.c_size_t),
                ("sha256", ctypes.c_char_p), ("mount", ctypes.c_char_p),
                ("key", ctypes.c_char_p)]


_FILE_FN = ctypes.CFUNCTYPE(None, ctypes.POINTER(_File), ctypes.c_void_p)

_PROTOTYPES = {
    "al_workspace_new": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t,
                                        ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(_lib.Error)]),
    "al_workspace_free": (None, [ctypes.c_void_p]),
    "al_workspace_set_mount_local": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p,
                                                    ctypes.c_char_p]),
    "al_workspace_load_tar": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                             ctypes.POINTER(_lib.Error)]),
    "al_workspace_tar": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(ctypes.c_size_t),
                                        ctypes.POINTER(_lib.Error)]),
    "al_workspace_outputs": (None, [ctypes.c_void_p, _FILE_FN, ctypes.c_void_p]),
    "al_workspace_commit": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_lib.Error)]),
    "al_run_opts_set_workspace": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
}

_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


def lib():
    """libairlock with the workspace calls' prototypes."""
    lib = _lib.load()
    if not getattr(lib, "_airlock_workspace", False):
        for name, (restype, argtypes) in _PROTOTYPES.items():
            f = getattr(lib, name)
            f.restype = restype
            f.argtypes = argtypes
        lib._airlock_workspace = True
    return lib


def _fail(what, rc, err):
    raise ConfigError("%s: %s" % (what, err.message.decode("utf-8", "replace") or
                                  _lib.code_name(rc)), _lib.code_name(rc))


class Workspace:
    """A run's files, built from a manifest (a dict or its JSON text; docs/workspace.md):
    inline files and directories, mounts, `outputs` prefixes (the only writable paths) and
    `limits`. `mounts={"name": "/a/dir"}` serves the manifest's local_dir (or s3_mount)
    entries of that mount name from local directories (symbolic links in them are never
    followed: the guest gets EACCES).

    Pass it to Runner.run(..., workspace=ws). One run at a time; a run resumed from a
    continuation or restarted from a journal needs a workspace built the same way (it replays
    the writes). After the run: outputs(), tar(), commit() (writable mounts)."""

    def __init__(self, manifest, mounts=None, commit_after_run=False):
        self._lib = lib()
        text = manifest if isinstance(manifest, (str, bytes)) else json.dumps(manifest)
        data = text.encode() if isinstance(text, str) else text
        handle = ctypes.c_void_p()
        err = _lib.Error()
        rc = self._lib.al_workspace_new(data, len(data), ctypes.byref(handle), ctypes.byref(err))
        if rc != 0:
            _fail("workspace", rc, err)
        self._handle = handle.value
        self.commit_after_run = commit_after_run
        for name, path in (mounts or {}).items():
            self.set_mount_local(name, path)

    @classmethod
    def directory(cls, path, outputs=("out/",), limits=None):
        """A host directory as the whole workspace: the guest reads everything below `path`
        (its root is the directory) and may write only under the `outputs` prefixes. What it
        writes stays in memory during the run; when the run completes, Runner.run (and arun)
        write those files into the directory (commit(): each file at its path below `path`,
        directories made as needed). A failed or interrupted run writes nothing; with start(),
        call commit() yourself once its result is completed."""
        manifest = {"version": 1,
                    "entries": {".": {"type": "local_dir", "mount": "directory",
                                      "read_only": False}},
                    "outputs": list(outputs)}
        if limits:
            manifest["limits"] = dict(limits)
        return cls(manifest, mounts={"directory": path}, commit_after_run=True)

    def _h(self):
        if not self._handle:
            raise ConfigError("the workspace is closed")
        return self._handle

    def set_mount_local(self, name, path):
        """Serves mount `name` from the local directory `path`."""
        rc = self._lib.al_workspace_set_mount_local(self._h(), name.encode(), str(path).encode())
        if rc != 0:
            raise ConfigError("mount %r: no entry uses it, or %s is not a directory" % (
                name, path), _lib.code_name(rc))

    def outputs(self):
        """The files under the outputs prefixes, in path order: dicts with path, data (bytes),
        sha256 (hex), and mount and key for a file written into a writable mount."""
        files = []

        def each(f, ud):
            c = f.contents
            files.append({"path": c.path.decode(),
                          "data": ctypes.string_at(c.data, c.len) if c.len else b"",
                          "sha256": c.sha256.decode(),
                          "mount": c.mount.decode() if c.mount else None,
                          "key": c.key.decode() if c.key else None})

        cb = _FILE_FN(each)
        self._lib.al_workspace_outputs(self._h(), cb, None)
        return files

    def tar(self):
        """The workspace's own files (mounts excluded) as a tar (bytes)."""
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        err = _lib.Error()
        rc = self._lib.al_workspace_tar(self._h(), ctypes.byref(out), ctypes.byref(n),
                                        ctypes.byref(err))
        if rc != 0:
            _fail("tar", rc, err)
        try:
            return ctypes.string_at(out.value, n.value)
        finally:
            _libc.free(out.value)

    def load_tar(self, data):
        """Replaces the inline entries by a snapshot (a tar, checked as untrusted input)."""
        data = bytes(data)
        err = _lib.Error()
        rc = self._lib.al_workspace_load_tar(self._h(), data, len(data), ctypes.byref(err))
        if rc != 0:
            _fail("snapshot", rc, err)

    def commit(self):
        """Writes what the guest wrote into writable mounts to them, all or nothing."""
        err = _lib.Error()
        rc = self._lib.al_workspace_commit(self._h(), ctypes.byref(err))
        if rc != 0:
            _fail("commit", rc, err)

    def close(self):
        if self._handle:
            self._lib.al_workspace_free(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
