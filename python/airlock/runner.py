"""Embedded mode: Runner and Result over libairlock (include/airlock.h).

runner.run() drives a run with al_run on the caller's thread: host functions are called there;
an `async def` host function (or one returning an awaitable) runs on the runner's private event
loop thread and completes its call from there. runner.arun() starts the run with al_run_start
and awaits a future that the done callback (on libairlock's event thread) resolves through
loop.call_soon_threadsafe, so the caller's loop never blocks; its host calls are dispatched to
that loop (async functions as tasks, plain ones on the loop's default executor), since the event
thread must not block. Cancelling the awaiting task cancels the run (al_run_cancel).

Every ctypes callback object and every Python object a C pointer names lives in a registry
entry for as long as the run (or runner) that uses it; a registry key, not a Python pointer,
is what travels as userdata.
"""
import asyncio
import concurrent.futures
import contextvars
import ctypes
import dataclasses
import inspect
import itertools
import json
import re
import threading
import traceback
import typing

from . import _lib, values
from .errors import ConfigError

_current = contextvars.ContextVar("airlock_call_context")
_keys = itertools.count(1)
_registry = {}  # key -> _Entry or _RunState
_registry_lock = threading.Lock()


def _register(obj):
    with _registry_lock:
        k = next(_keys)
        _registry[k] = obj
    return k


def _unregister(k):
    with _registry_lock:
        _registry.pop(k, None)


def _lookup(k):
    with _registry_lock:
        return _registry.get(k)


class Interrupt(BaseException):
    """Raised by airlock.interrupt(): the host call interrupts the run for a person. A
    BaseException, so that an `except Exception` in the host function does not swallow it."""

    def __init__(self, payload=None):
        super().__init__(payload)
        self.payload = payload


def interrupt(payload=None):
    """Interrupts the run from inside a host function: the run ends "interrupted" with this
    payload (any encodable value) once nothing else is in flight; resume it with
    run(..., resume=result.continuation, resolutions={id: value}). Never returns."""
    raise Interrupt(payload)


@dataclasses.dataclass
class CallContext:
    """The context of one host call, from airlock.call_context() inside the function."""

    run_id: str
    function: str
    seq: int
    args: list = dataclasses.field(default_factory=list)
    interruption_id: typing.Optional[str] = None
    interruption: typing.Any = None   # the Interruption being resumed (id, function, args,
    #                                   payload: what the earlier interrupt() gave), else None
    resolution: typing.Any = None     # what the person resolved it with
    resumed: bool = False             # True when this call answers a resolved interruption
    _call: typing.Any = dataclasses.field(default=None, repr=False)

    @property
    def cancelled(self):
        """True once the run has ended and nobody will read this call's answer."""
        c = self._call
        if c is None:
            return True
        with c.lock:  # the handle is freed by its completion
            return bool(c.done or _lib.load().al_call_cancelled(c.ptr))


def call_context():
    """The CallContext of the host call being served; LookupError outside a host function."""
    try:
        return _current.get()
    except LookupError:
        raise LookupError("airlock.call_context() is only available inside a host function")


@dataclasses.dataclass
class ConsoleEntry:
    level: str
    text: str


@dataclasses.dataclass
class Stats:
    wall_us: int
    cpu_us: int
    peak_memory_bytes: int
    host_calls: int
    seed: int
    clock_ms: int
    jailed: bool


@dataclasses.dataclass
class Interruption:
    id: str
    function: str
    args: list
    payload: typing.Any


@dataclasses.dataclass
class JournalEntry:
    """One answer a host function gave a run, as the journal callback receives it and as
    journal_entries takes it back (or as the dict of to_dict()): the run that starts from a
    journal answers these calls from it, in their positions, without calling the host."""

    position: int       # 1-based: the order in which the guest received the answers
    call: int           # the call's id (CallContext.seq)
    function: str       # "group.fn"
    args_sha256: str    # hex SHA-256 of the call's arguments (boundary JSON)
    kind: str           # "value", "throw" or "throw_type"
    sync: bool          # a synchronous host function's call
    clock_ms: int       # the guest clock the answer set
    payload: str        # "value": the boundary JSON ("" for undefined); else the message

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls)})


@dataclasses.dataclass
class RunError:
    code: str      # TIMEOUT, USER_ERROR, HOST_FUNCTION_ERROR, ...
    name: str      # the guest's error name ("TypeError"), "" when none
    message: str
    stack: str

    def __str__(self):
        return "%s: %s" % (self.code, self.message)


@dataclasses.dataclass
class Result:
    status: str    # "completed", "failed" or "interrupted"
    value: typing.Any = None
    error: typing.Optional[RunError] = None
    console: typing.List[ConsoleEntry] = dataclasses.field(default_factory=list)
    stats: typing.Optional[Stats] = None
    interruptions: typing.List[Interruption] = dataclasses.field(default_factory=list)
    continuation: typing.Optional[str] = None
    run_id: str = ""

    @property
    def ok(self):
        return self.status == "completed"


def _result(lib, ptr):
    """A Result from an al_result (not freed here)."""
    n = ctypes.c_size_t()
    status = _lib.STATUS_NAMES.get(lib.al_result_status(ptr), "failed")
    r = Result(status=status, run_id=(lib.al_result_run_id(ptr) or b"").decode())
    v = lib.al_result_value(ptr, ctypes.byref(n))
    if v and status == "completed":
        r.value = values.decode(ctypes.string_at(v, n.value))
    code = lib.al_result_error_code(ptr)
    if code != 0:
        t = _lib.ErrorText()
        lib.al_result_error_text(ptr, ctypes.byref(t))
        r.error = RunError(_lib.code_name(code), _lib.text(t.name, t.name_len) or "",
                           _lib.text(t.message, t.message_len) or "",
                           _lib.text(t.stack, t.stack_len) or "")
    for i in range(lib.al_result_console_count(ptr)):
        lvl = ctypes.c_int()
        p = lib.al_result_console_text(ptr, i, ctypes.byref(lvl), ctypes.byref(n))
        r.console.append(ConsoleEntry(_lib.CONSOLE_LEVELS.get(lvl.value, "log"),
                                      _lib.text(p, n.value) or ""))
    s = _lib.Stats()
    lib.al_result_stats(ptr, ctypes.byref(s))
    r.stats = Stats(s.wall_us, s.cpu_us, s.peak_memory_bytes, s.host_calls, s.seed, s.clock_ms,
                    bool(s.jailed))
    for i in range(lib.al_result_interruption_count(ptr)):
        it = _lib.Interruption()
        if lib.al_result_interruption(ptr, i, ctypes.byref(it)) == 0:
            r.interruptions.append(Interruption(
                it.id.decode(), it.function.decode(), values.decode(it.args),
                values.decode(it.payload) if it.payload else None))
    c = lib.al_result_continuation(ptr, ctypes.byref(n))
    if c:
        r.continuation = ctypes.string_at(c, n.value).decode()
    return r


# ---------------------------------------------------------------------------------- host calls

class _Call:
    """One al_call handle: completed exactly once, from any thread."""

    def __init__(self, ptr):
        self.ptr = ptr
        self.done = False
        self.lock = threading.Lock()

    def _finish(self, how, *args):
        with self.lock:
            if self.done:
                return
            self.done = True
            how(self.ptr, *args)

    def succeed(self, value):
        lib = _lib.load()
        try:
            data = values.encode(value).encode()
        except (TypeError, ValueError) as e:
            self._finish(lib.al_call_throw, ("cannot return the value: %s" % e).encode())
            return
        self._finish(lib.al_call_return, data, len(data))

    def fail(self, e):
        lib = _lib.load()
        if isinstance(e, Interrupt):
            try:
                data = values.encode(e.payload, "payload").encode()
            except (TypeError, ValueError) as err:
                self._finish(lib.al_call_throw, ("cannot interrupt: %s" % err).encode())
                return
            self._finish(lib.al_call_interrupt, data, len(data))
            return
        msg = str(e) or type(e).__name__
        # a TypeError (also Python's own, for a call with the wrong number of arguments) is the
        # guest's TypeError: the arguments were wrong, not the host
        how = lib.al_call_throw_type_error if isinstance(e, TypeError) else lib.al_call_throw
        self._finish(how, msg.encode("utf-8", "replace").replace(b"\0", b" "))


class _Entry:
    def __init__(self, name, fn):
        self.name = name
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn)


class _RunState:
    """Per-run: how host calls are dispatched (mode "sync": this thread + runner loop;
    "async": the caller's asyncio loop)."""

    def __init__(self, runner, mode, loop=None):
        self.runner = runner
        self.mode = mode
        self.loop = loop
        self.entries = {}
        self.journal = None  # the journal callback
        self.workspace = None  # kept alive for the run


def _context(lib, ptr, args):
    n = ctypes.c_size_t()
    cc = CallContext(run_id=(lib.al_call_run_id(ptr) or b"").decode(),
                     function=lib.al_call_name(ptr).decode(), seq=lib.al_call_seq(ptr),
                     args=args)
    iid = lib.al_call_interruption_id(ptr)
    if iid:
        cc.interruption_id = iid.decode()
        cc.resumed = True
        p = lib.al_call_resume_payload(ptr, ctypes.byref(n))
        payload = values.decode(ctypes.string_at(p, n.value)) if p else None
        cc.interruption = Interruption(cc.interruption_id, cc.function, args, payload)
        p = lib.al_call_resolution(ptr, ctypes.byref(n))
        if p:
            cc.resolution = values.decode(ctypes.string_at(p, n.value))
    return cc


async def _await_and_settle(call, aw):
    try:
        out = await aw
    except BaseException as e:  # noqa: B902
        call.fail(e)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return
    call.succeed(out)


def _run_sync_fn(call, fn, args):
    try:
        out = fn(*args)
    except BaseException as e:  # noqa: B902
        call.fail(e)
        return None
    if inspect.isawaitable(out):
        return out
    call.succeed(out)
    return None


def _host_trampoline(call_ptr, userdata):
    """The one al_host_fn: finds the entry and the run, then serves the call. Never raises."""
    call = _Call(call_ptr)
    try:
        lib = _lib.load()
        entry = _lookup(userdata or 0)
        run = _lookup(lib.al_call_run_userdata(call_ptr) or 0)
        if not isinstance(entry, _Entry) or not isinstance(run, _RunState):
            call.fail(RuntimeError("airlock: no Python function for this call"))
            return
        n = ctypes.c_size_t()
        args = values.decode(ctypes.string_at(lib.al_call_args(call_ptr, ctypes.byref(n)),
                                              n.value))
        cc = _context(lib, call_ptr, args)
        cc._call = call
        ctx = contextvars.copy_context()
        ctx.run(_current.set, cc)
        if run.mode == "sync":
            aw = None if entry.is_async else ctx.run(_run_sync_fn, call, entry.fn, args)
            if entry.is_async or aw is not None:
                loop = run.runner._background_loop()

                def start():
                    try:
                        coro = aw if aw is not None else entry.fn(*args)
                    except BaseException as e:  # noqa: B902 - e.g. a wrong argument count
                        call.fail(e)
                        return
                    loop.create_task(_await_and_settle(call, coro))
                loop.call_soon_threadsafe(ctx.run, start)
            return
        loop = run.loop

        def dispatch():
            if entry.is_async:
                try:
                    coro = entry.fn(*args)
                except BaseException as e:  # noqa: B902
                    call.fail(e)
                    return
                loop.create_task(_await_and_settle(call, coro))
                return

            def in_thread():
                aw = _run_sync_fn(call, entry.fn, args)
                if aw is not None:
                    asyncio.run_coroutine_threadsafe(_await_and_settle(call, aw), loop)
            try:
                loop.run_in_executor(None, ctx.copy().run, in_thread)
            except BaseException as e:  # noqa: B902 - a closed executor
                call.fail(e)
        loop.call_soon_threadsafe(ctx.run, dispatch)
    except BaseException as e:  # noqa: B902 - nothing may unwind into C
        call.fail(e)


_HOST = _lib.HOST_FN(_host_trampoline)


def _done_trampoline(run_ptr, result_ptr, userdata):
    st = _lookup(userdata or 0)
    lib = _lib.load()
    try:
        if st is None:
            return
        st.finish(lib, run_ptr, result_ptr)
    finally:
        lib.al_result_free(result_ptr)


_DONE = _lib.DONE_FN(_done_trampoline)


def _journal_trampoline(entry_ptr, userdata):
    """An answer about to reach the guest: the run's journal callback keeps it. Its exception
    fails the run (INTERNAL_ERROR) without the answer being delivered; nothing unwinds into C."""
    try:
        st = _lookup(userdata or 0)
        e = entry_ptr.contents
        payload = ctypes.string_at(e.payload, e.len) if e.len else b""
        st.journal(JournalEntry(e.position, e.call, e.function.decode(),
                                bytes(e.args_sha256).hex(), _lib.JOURNAL_KINDS[e.kind],
                                bool(e.sync), e.clock_ms,
                                payload.decode("utf-8", "surrogateescape")))
        return _lib.JOURNAL_DELIVER
    except BaseException:  # noqa: B902
        traceback.print_exc()  # the run fails INTERNAL_ERROR: say why where the application sees
        return _lib.JOURNAL_FAIL


_JOURNAL = _lib.JOURNAL_FN(_journal_trampoline)
_JOURNAL_KIND_CODES = {v: k for k, v in _lib.JOURNAL_KINDS.items()}


def _add_journal_entry(lib, opts, entry):
    if isinstance(entry, dict):
        entry = JournalEntry.from_dict(entry)
    if entry.kind not in _JOURNAL_KIND_CODES:
        raise ConfigError("journal entry %r: kind must be value, throw or throw_type" % (
            entry.position,))
    for name in ("position", "call"):
        if not 1 <= int(getattr(entry, name)) <= 0xFFFFFFFF:  # ctypes would wrap it silently
            raise ConfigError("journal entry %r: %s must be in 1..4294967295" % (
                entry.position, name))
    payload = entry.payload.encode("utf-8", "surrogateescape")
    digest = bytes.fromhex(entry.args_sha256)
    if len(digest) != 32:
        raise ConfigError("journal entry %r: args_sha256 is not 64 hex digits" % (
            entry.position,))
    c = _lib.JournalEntry(int(entry.position), int(entry.call), entry.function.encode(),
                          (ctypes.c_uint8 * 32)(*digest), _JOURNAL_KIND_CODES[entry.kind],
                          1 if entry.sync else 0, int(entry.clock_ms),
                          ctypes.cast(ctypes.c_char_p(payload), ctypes.c_void_p), len(payload))
    _check(lib.al_run_opts_add_journal_entry(opts, ctypes.byref(c)),
           "journal entry %r" % (entry.position,))


class _AsyncRun:
    """The state of one run started with al_run_start: its handle and where its result goes
    (an asyncio future on `loop`, or a concurrent.futures.Future when loop is None); cancel
    and done exclude each other."""

    def __init__(self, loop, state):
        self.loop = loop
        self.state = state
        self.future = loop.create_future() if loop is not None else concurrent.futures.Future()
        self.lock = threading.RLock()  # a done callback on this thread inside al_run_start
        self.handle = None
        self.released = False
        self.run_id = ""
        self.key = _register(self)

    def finish(self, lib, run_ptr, result_ptr):
        try:
            res = _result(lib, result_ptr)
            err = None
        except BaseException as e:  # noqa: B902
            res, err = None, e
        with self.lock:
            self.released = True
            lib.al_run_release(run_ptr)
        _unregister(self.key)
        _unregister(self.state.key)
        for k in self.state.entries:
            _unregister(k)

        def deliver():
            if self.future.done():
                return
            if err is not None:
                self.future.set_exception(err)
            else:
                self.future.set_result(res)
        if self.loop is None:
            deliver()
            return
        try:
            self.loop.call_soon_threadsafe(deliver)
        except RuntimeError:
            pass  # the loop is closed: nobody is waiting

    def cancel(self):
        with self.lock:
            if self.handle is not None and not self.released:
                _lib.load().al_run_cancel(self.handle)


class Run:
    """A run started with Runner.start(): cancel() it from any thread, result() waits."""

    def __init__(self, ar, run_id):
        self._ar = ar
        self.run_id = run_id

    def cancel(self):
        """Ends the run failed with ABORTED within milliseconds (no effect once it is over)."""
        self._ar.cancel()

    def done(self):
        return self._ar.future.done()

    def result(self, timeout=None):
        """The Result, waiting up to `timeout` seconds (concurrent.futures.TimeoutError)."""
        return self._ar.future.result(timeout)


# ---------------------------------------------------------------------------------- runner

def _limit(lib, key, value):
    """(al_limit, value) of a limit given as ("timeout", 5000) or ("memory", "64M") or
    ("host_calls", 3): parsed by libairlock's own al_limit_parse."""
    name = str(key).replace("_", "-")
    for suffix in ("-ms", "-bytes"):
        if name.endswith(suffix) and name[:-len(suffix)] in _lib.LIMITS:
            name = name[:-len(suffix)]
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError("limit %s: %r is not an int or a string like '2s' or '64M'" % (
            key, value))
    which = ctypes.c_int()
    out = ctypes.c_uint64()
    err = _lib.Error()
    rc = lib.al_limit_parse(("%s=%s" % (name, value)).encode(), ctypes.byref(which),
                            ctypes.byref(out), ctypes.byref(err))
    if rc != 0:
        raise ConfigError(err.message.decode("utf-8", "replace"), _lib.code_name(rc))
    return which.value, out.value


def _after_run(workspace, result):
    """A directory workspace gets what a completed run wrote (Workspace.directory)."""
    if workspace is not None and workspace.commit_after_run and result.status == "completed":
        workspace.commit()


def _with_input(source, value):
    """The source with the guest's frozen global `input` declared in front: the declaration
    airlockd makes for a template's run (runs_source in src/server/runs.c), on the first line
    (after a leading "use strict") so that every other line keeps its number."""
    if value is None:
        return source
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ConfigError("input is not a JSON value: %s" % e) from None
    if not isinstance(source, str):
        source = bytes(source).decode("utf-8")
    m = re.match(r"""[ \t]*(["'])use strict\1[ \t]*;?""", source)
    directive = m.group(0) + " " if m else ""
    return (directive + "const input = ((f) => f(f, JSON.parse(" + json.dumps(text) + ")))"
            "((f, o) => { if (o !== null && typeof o === \"object\") { "
            "for (const k of Object.keys(o)) f(f, o[k]); Object.freeze(o); } return o; }); " +
            source[len(m.group(0)) if m else 0:])


def _check(rc, what):
    if rc != 0:
        raise ConfigError("%s: %s" % (what, _lib.code_name(rc)), _lib.code_name(rc))


class Runner:
    """A libairlock runner: limits, the continuation secret and host functions shared by its
    runs. Thread-safe: any number of threads may call run() at once.

    limits:  {"timeout": 5000, "memory": "64M", "host_calls": 10, ...} (ms, bytes, counts; the
             names of al_limit_name, "_" for "-", an optional _ms/_bytes suffix)
    secret:  the continuation key (str or bytes, at least 32 bytes) that interrupts need
    host:    {"group.fn": callable} for every run of this runner
    worker:  the airlock-worker path (default: $AIRLOCK_WORKER, else the installed one)
    """

    def __init__(self, limits=None, secret=None, host=None, worker=None, warm_workers=None,
                 max_concurrency=None, unsafe_no_jail=False):
        lib = _lib.load()
        self._lib = lib
        self._runner = None
        self._loop = None
        self._loop_lock = threading.Lock()
        self._keys = []
        cfg = lib.al_config_new()
        if not cfg:
            raise MemoryError("al_config_new")
        try:
            for k, v in (limits or {}).items():
                which, val = _limit(lib, k, v)
                _check(lib.al_config_set_limit(cfg, which, val), "limit %s" % k)
            if secret is not None:
                s = secret.encode() if isinstance(secret, str) else bytes(secret)
                _check(lib.al_config_set_continuation_key(cfg, s, len(s)),
                       "secret (at least 32 bytes)")
            for name, fn in (host or {}).items():
                k = _register(_Entry(name, fn))
                self._keys.append(k)
                _check(lib.al_config_add_host(cfg, name.encode(), _HOST, k, 0),
                       "host function %r" % name)
            if worker is not None:
                _check(lib.al_config_set_worker_path(cfg, str(worker).encode()), "worker")
            if warm_workers is not None:
                _check(lib.al_config_set_warm_workers(cfg, warm_workers), "warm_workers")
            if max_concurrency is not None:
                _check(lib.al_config_set_max_concurrency(cfg, max_concurrency, 1 << 20),
                       "max_concurrency")
            if unsafe_no_jail:
                _check(lib.al_config_set_unsafe_no_jail(cfg, 1), "unsafe_no_jail")
            out = ctypes.c_void_p()
            err = _lib.Error()
            rc = lib.al_runner_new(cfg, ctypes.byref(out), ctypes.byref(err))
            if rc != 0:
                raise ConfigError(err.message.decode("utf-8", "replace"), _lib.code_name(rc))
            self._runner = out.value
        finally:
            lib.al_config_free(cfg)

    # ------------------------------------------------------------------ lifecycle
    def close(self):
        """Frees the runner (its unfinished asynchronous runs are cancelled first)."""
        if self._runner:
            self._lib.al_runner_free(self._runner)
            self._runner = None
        for k in self._keys:
            _unregister(k)
        self._keys = []
        with self._loop_lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _background_loop(self):
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                t = threading.Thread(target=loop.run_forever, name="airlock-py-loop",
                                     daemon=True)
                t.start()
                self._loop = loop
            return self._loop

    # ------------------------------------------------------------------ runs
    def _opts(self, state, source, host, lang, seed, timeout, limits, module, filename,
              resume, resolutions, run_id, clock_ms, journal=None, journal_entries=None,
              workspace=None):
        lib = self._lib
        if not self._runner:
            raise ConfigError("the runner is closed")
        opts = lib.al_run_opts_new()
        if not opts:
            raise MemoryError("al_run_opts_new")
        try:
            src = source.encode() if isinstance(source, str) else bytes(source)
            _check(lib.al_run_opts_set_source(opts, src, len(src),
                                              filename.encode() if filename else None),
                   "source")
            if lang not in ("js", "ts"):
                raise ConfigError("lang must be 'js' or 'ts', not %r" % (lang,))
            t = (_lib.AL_SOURCE_MODULE if module else _lib.AL_SOURCE_BODY) | (
                _lib.AL_SOURCE_TYPESCRIPT if lang == "ts" else 0)
            _check(lib.al_run_opts_set_source_type(opts, t), "source type")
            if seed is not None:
                lib.al_run_opts_set_seed(opts, seed)
            if clock_ms is not None:
                lib.al_run_opts_set_clock(opts, int(clock_ms))
            lim = dict(limits or {})
            if timeout is not None:
                lim["timeout"] = max(1, int(round(timeout * 1000)))
            for k, v in lim.items():
                which, val = _limit(lib, k, v)
                _check(lib.al_run_opts_set_limit(opts, which, val), "limit %s" % k)
            for name, fn in (host or {}).items():
                k = _register(_Entry(name, fn))
                state.entries[k] = name
                _check(lib.al_run_opts_add_host(opts, name.encode(), _HOST, k, 0),
                       "host function %r" % name)
            if run_id is not None:
                _check(lib.al_run_opts_set_run_id(opts, run_id.encode()), "run_id")
            if resume is not None:
                c = resume.encode() if isinstance(resume, str) else bytes(resume)
                _check(lib.al_run_opts_set_resume(opts, c, len(c)), "resume")
            for iid, v in (resolutions or {}).items():
                data = values.encode(v, "resolution").encode()
                _check(lib.al_run_opts_add_resolution(opts, iid.encode(), data, len(data)),
                       "resolution %r" % iid)
            for entry in journal_entries or ():
                _add_journal_entry(lib, opts, entry)
            if workspace is not None:
                from . import workspace as _ws
                _check(_ws.lib().al_run_opts_set_workspace(opts, workspace._h()), "workspace")
                state.workspace = workspace  # it must outlive the run
            state.key = _register(state)
            lib.al_run_opts_set_userdata(opts, state.key)
            if journal is not None:
                state.journal = journal
                lib.al_run_opts_set_journal(opts, _JOURNAL, state.key)
            return opts
        except BaseException:
            lib.al_run_opts_free(opts)
            for k in state.entries:
                _unregister(k)
            raise

    def run(self, source, host=None, lang="js", seed=None, timeout=None, limits=None,
            module=False, filename=None, resume=None, resolutions=None, run_id=None,
            clock_ms=None, journal=None, journal_entries=None, workspace=None, input=None):
        """Runs `source` (a function body; module=True for an ES module) and returns its
        Result. host: {"group.fn": callable} for this run only, called with the guest's
        arguments; timeout in seconds; resume=a continuation with resolutions={id: value}
        (the same source and host functions as the interrupted run).

        journal=fn calls fn(JournalEntry) with each answer before the guest sees it (on the
        thread driving the run: here the caller's, for start() and arun() libairlock's event
        thread, so keep it quick); if fn raises, the run fails INTERNAL_ERROR and the answer is
        not delivered. journal_entries=[JournalEntry or its dict, ...] starts the run from a
        journal: those calls are answered from it and never reach the host; the run needs the
        same source, host functions, seed and clock_ms as the run that wrote it
        (docs/journal.md).

        workspace=airlock.Workspace gives the guest `workspace` and node:fs/promises over it
        (docs/workspace.md); one from Workspace.directory is committed when the run completed.

        input=a JSON value (dict, list, str, number, bool) gives the guest a global `input`, as
        airlockd gives a template's run its input: a const, deeply frozen. It is declared on
        the source's first line, so a resume or a journal replay needs the same input (a
        continuation is bound to the source). None: no `input` global."""
        lib = self._lib
        state = _RunState(self, "sync")
        state.key = None
        opts = self._opts(state, _with_input(source, input), host, lang, seed, timeout, limits,
                          module, filename, resume, resolutions, run_id, clock_ms, journal,
                          journal_entries, workspace)
        res = ctypes.c_void_p()
        err = _lib.Error()
        try:
            rc = lib.al_run(self._runner, opts, ctypes.byref(res), ctypes.byref(err))
        finally:
            lib.al_run_opts_free(opts)
        try:
            if rc != 0:
                raise ConfigError(err.message.decode("utf-8", "replace") or
                                  _lib.code_name(rc), _lib.code_name(rc))
            try:
                result = _result(lib, res.value)
            finally:
                lib.al_result_free(res.value)
            _after_run(workspace, result)
            return result
        finally:
            _unregister(state.key)
            for k in state.entries:
                _unregister(k)

    def _start(self, opts, state, loop):
        lib = self._lib
        ar = _AsyncRun(loop, state)
        handle = ctypes.c_void_p()
        err = _lib.Error()
        with ar.lock:
            try:
                rc = lib.al_run_start(self._runner, opts, _DONE, ar.key, ctypes.byref(handle),
                                      ctypes.byref(err))
            finally:
                lib.al_run_opts_free(opts)
            if rc == 0:
                ar.handle = handle.value
                if not ar.released:
                    ar.run_id = lib.al_run_id(ar.handle).decode()
        if rc != 0:
            _unregister(ar.key)
            _unregister(state.key)
            for k in state.entries:
                _unregister(k)
            raise ConfigError(err.message.decode("utf-8", "replace") or _lib.code_name(rc),
                              _lib.code_name(rc))
        return ar

    def start(self, source, host=None, lang="js", seed=None, timeout=None, limits=None,
              module=False, filename=None, resume=None, resolutions=None, run_id=None,
              clock_ms=None, journal=None, journal_entries=None, workspace=None, input=None):
        """Starts a run and returns at once a Run (cancel(), result(timeout)); its host
        functions run on the runner's own event loop thread (plain ones in its executor)."""
        loop = self._background_loop()
        state = _RunState(self, "async", loop)
        state.key = None
        opts = self._opts(state, _with_input(source, input), host, lang, seed, timeout, limits,
                          module, filename, resume, resolutions, run_id, clock_ms, journal,
                          journal_entries, workspace)
        ar = self._start(opts, state, None)
        return Run(ar, ar.run_id)

    async def arun(self, source, host=None, lang="js", seed=None, timeout=None, limits=None,
                   module=False, filename=None, resume=None, resolutions=None, run_id=None,
                   clock_ms=None, journal=None, journal_entries=None, workspace=None,
                   input=None):
        """run() for asyncio: the loop goes on while the run runs; host functions run on this
        loop (async ones as tasks, plain ones in its default executor). Cancelling the task
        cancels the run."""
        loop = asyncio.get_running_loop()
        state = _RunState(self, "async", loop)
        state.key = None
        opts = self._opts(state, _with_input(source, input), host, lang, seed, timeout, limits,
                          module, filename, resume, resolutions, run_id, clock_ms, journal,
                          journal_entries, workspace)
        ar = self._start(opts, state, loop)
        try:
            result = await asyncio.shield(ar.future)
            _after_run(workspace, result)
            return result
        except asyncio.CancelledError:
            ar.cancel()
            raise
