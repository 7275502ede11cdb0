"""The ctypes binding of libairlock: finding and loading the library, and the prototypes of the
calls the package uses (include/airlock.h is their reference). Nothing else in the package
touches ctypes' function table.

The library is looked for, in order, at $AIRLOCK_LIBRARY (a path), then by the dynamic loader
as libairlock.so.0 (LD_LIBRARY_PATH, ld.so.cache: an installed library), then through
ctypes.util.find_library. It is loaded on first use, so `import airlock` and airlock.Client
work on machines without it.
"""
import ctypes
import ctypes.util
import os
import threading

from .errors import LibraryNotFound

c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
c_size_t = ctypes.c_size_t
c_int = ctypes.c_int
c_uint = ctypes.c_uint
c_uint32 = ctypes.c_uint32
c_uint64 = ctypes.c_uint64
c_int64 = ctypes.c_int64
P_size_t = ctypes.POINTER(c_size_t)

AL_SOURCE_BODY = 0
AL_SOURCE_MODULE = 1
AL_SOURCE_TYPESCRIPT = 0x100
AL_HOST_SYNC = 1
STATUS_NAMES = {0: "completed", 1: "failed", 2: "interrupted"}
CONSOLE_LEVELS = {0: "log", 1: "info", 2: "warn", 3: "error", 4: "debug"}


class Error(ctypes.Structure):
    _fields_ = [("code", c_int), ("sys_errno", c_int), ("message", ctypes.c_char * 256)]


class Stats(ctypes.Structure):
    _fields_ = [("wall_us", c_uint64), ("cpu_us", c_uint64), ("peak_memory_bytes", c_uint64),
                ("host_calls", c_uint32), ("seed", c_uint64), ("clock_ms", c_int64),
                ("jailed", c_int)]


class Interruption(ctypes.Structure):
    _fields_ = [("id", c_char_p), ("function", c_char_p), ("args", c_char_p),
                ("payload", c_char_p)]


class ErrorText(ctypes.Structure):
    _fields_ = [("name", c_void_p), ("name_len", c_size_t), ("message", c_void_p),
                ("message_len", c_size_t), ("stack", c_void_p), ("stack_len", c_size_t)]


class JournalEntry(ctypes.Structure):
    _fields_ = [("position", c_uint32), ("call", c_uint32), ("function", c_char_p),
                ("args_sha256", ctypes.c_uint8 * 32), ("kind", c_int), ("sync", c_int),
                ("clock_ms", c_int64), ("payload", c_void_p), ("len", c_size_t)]


JOURNAL_KINDS = {0: "value", 1: "throw", 2: "throw_type"}
JOURNAL_DELIVER = 0
JOURNAL_FAIL = 2

# void al_host_fn(struct al_call *, void *); void al_run_done_fn(struct al_run *, result, ud)
HOST_FN = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)
DONE_FN = ctypes.CFUNCTYPE(None, c_void_p, c_void_p, c_void_p)
# enum al_journal_verdict al_journal_fn(const struct al_journal_entry *, void *)
JOURNAL_FN = ctypes.CFUNCTYPE(c_int, ctypes.POINTER(JournalEntry), c_void_p)

_PROTOTYPES = {
    "al_version": (c_char_p, []),
    "al_code_name": (c_char_p, [c_int]),
    "al_limit_parse": (c_int, [c_char_p, ctypes.POINTER(c_int), ctypes.POINTER(c_uint64),
                               ctypes.POINTER(Error)]),
    "al_config_new": (c_void_p, []),
    "al_config_free": (None, [c_void_p]),
    "al_config_set_limit": (c_int, [c_void_p, c_int, c_uint64]),
    "al_config_add_host": (c_int, [c_void_p, c_char_p, HOST_FN, c_void_p, c_uint]),
    "al_config_set_worker_path": (c_int, [c_void_p, c_char_p]),
    "al_config_set_unsafe_no_jail": (c_int, [c_void_p, c_int]),
    "al_config_set_warm_workers": (c_int, [c_void_p, c_uint]),
    "al_config_set_continuation_key": (c_int, [c_void_p, c_char_p, c_size_t]),
    "al_config_set_max_concurrency": (c_int, [c_void_p, c_uint, c_uint]),
    "al_runner_new": (c_int, [c_void_p, ctypes.POINTER(c_void_p), ctypes.POINTER(Error)]),
    "al_runner_free": (None, [c_void_p]),
    "al_run_opts_new": (c_void_p, []),
    "al_run_opts_free": (None, [c_void_p]),
    "al_run_opts_set_source": (c_int, [c_void_p, c_char_p, c_size_t, c_char_p]),
    "al_run_opts_set_limit": (c_int, [c_void_p, c_int, c_uint64]),
    "al_run_opts_set_seed": (None, [c_void_p, c_uint64]),
    "al_run_opts_set_clock": (None, [c_void_p, c_int64]),
    "al_run_opts_set_source_type": (c_int, [c_void_p, c_uint]),
    "al_run_opts_set_resume": (c_int, [c_void_p, c_char_p, c_size_t]),
    "al_run_opts_add_resolution": (c_int, [c_void_p, c_char_p, c_char_p, c_size_t]),
    "al_run_opts_add_host": (c_int, [c_void_p, c_char_p, HOST_FN, c_void_p, c_uint]),
    "al_run_opts_set_userdata": (None, [c_void_p, c_void_p]),
    "al_run_opts_set_run_id": (c_int, [c_void_p, c_char_p]),
    "al_run_opts_set_journal": (None, [c_void_p, JOURNAL_FN, c_void_p]),
    "al_run_opts_add_journal_entry": (c_int, [c_void_p, ctypes.POINTER(JournalEntry)]),
    "al_run": (c_int, [c_void_p, c_void_p, ctypes.POINTER(c_void_p), ctypes.POINTER(Error)]),
    "al_run_start": (c_int, [c_void_p, c_void_p, DONE_FN, c_void_p, ctypes.POINTER(c_void_p),
                             ctypes.POINTER(Error)]),
    "al_run_cancel": (None, [c_void_p]),
    "al_run_release": (None, [c_void_p]),
    "al_run_id": (c_char_p, [c_void_p]),
    "al_result_free": (None, [c_void_p]),
    "al_result_status": (c_int, [c_void_p]),
    "al_result_value": (c_void_p, [c_void_p, P_size_t]),
    "al_result_error_code": (c_int, [c_void_p]),
    "al_result_error_text": (None, [c_void_p, ctypes.POINTER(ErrorText)]),
    "al_result_console_count": (c_size_t, [c_void_p]),
    "al_result_console_text": (c_void_p, [c_void_p, c_size_t, ctypes.POINTER(c_int), P_size_t]),
    "al_result_stats": (None, [c_void_p, ctypes.POINTER(Stats)]),
    "al_result_interruption_count": (c_size_t, [c_void_p]),
    "al_result_interruption": (c_int, [c_void_p, c_size_t, ctypes.POINTER(Interruption)]),
    "al_result_continuation": (c_void_p, [c_void_p, P_size_t]),
    "al_result_run_id": (c_char_p, [c_void_p]),
    "al_call_name": (c_char_p, [c_void_p]),
    "al_call_args": (c_void_p, [c_void_p, P_size_t]),
    "al_call_seq": (c_uint32, [c_void_p]),
    "al_call_run_id": (c_char_p, [c_void_p]),
    "al_call_run_userdata": (c_void_p, [c_void_p]),
    "al_call_cancelled": (c_int, [c_void_p]),
    "al_call_return": (None, [c_void_p, c_char_p, c_size_t]),
    "al_call_throw": (None, [c_void_p, c_char_p]),
    "al_call_throw_type_error": (None, [c_void_p, c_char_p]),
    "al_call_interrupt": (None, [c_void_p, c_char_p, c_size_t]),
    "al_call_interruption_id": (c_char_p, [c_void_p]),
    "al_call_resume_payload": (c_void_p, [c_void_p, P_size_t]),
    "al_call_resolution": (c_void_p, [c_void_p, P_size_t]),
}

LIMITS = ["timeout", "cpu", "memory", "stack", "source", "result", "console", "host-args",
          "host-output", "host-calls", "in-flight", "continuation"]

_lock = threading.Lock()
_lib = None


def _candidates():
    path = os.environ.get("AIRLOCK_LIBRARY")
    if path:
        return [path], True
    names = ["libairlock.so.0"]
    found = ctypes.util.find_library("airlock")
    if found and found not in names:
        names.append(found)
    return names, False


def load():
    """The loaded library (a ctypes.CDLL with prototypes). Raises LibraryNotFound."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        names, explicit = _candidates()
        tried = []
        lib = None
        for name in names:
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError as e:
                tried.append("%s (%s)" % (name, e))
        if lib is None:
            if explicit:
                msg = "libairlock not found: AIRLOCK_LIBRARY=%s cannot be loaded: %s" % (
                    names[0], "; ".join(tried))
            else:
                msg = ("libairlock not found: set AIRLOCK_LIBRARY to the path of libairlock.so, "
                       "add its directory to LD_LIBRARY_PATH, or install it (make install); "
                       "tried " + "; ".join(tried))
            raise LibraryNotFound(msg)
        for fname, (restype, argtypes) in _PROTOTYPES.items():
            try:
                f = getattr(lib, fname)
            except AttributeError:
                raise LibraryNotFound("%s is not libairlock: no %s" % (names[0], fname))
            f.restype = restype
            f.argtypes = argtypes
        _lib = lib
        return lib


def text(ptr, length):
    """Bytes at ptr (a c_void_p value) of length, decoded as UTF-8; None for NULL."""
    if not ptr:
        return None
    return ctypes.string_at(ptr, length).decode("utf-8", "replace")


def code_name(code):
    return load().al_code_name(code).decode()
