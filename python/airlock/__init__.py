"""airlock: run code that AI agents write in an isolated QuickJS worker, from Python.

Embedded mode (libairlock through ctypes): Runner, Result, call_context(), interrupt(),
JournalEntry, Workspace.
Client mode (airlockd over HTTP): Client, with typed errors in airlock.errors.
"""
from . import errors
from .client import Client
from .errors import (AdhocDisabled, AirlockError, ApiError, BadRequest, ConfigError, Conflict,
                     Forbidden, InputInvalid, LibraryNotFound, MethodNotAllowed, NotFound,
                     PayloadTooLarge, RateLimited, ServerError, TemplateRevoked,
                     Unauthenticated, VersionNotApproved)
from .runner import (CallContext, ConsoleEntry, Interrupt, Interruption, JournalEntry, Result,
                     Run, Runner, RunError, Stats, call_context, interrupt)
from .values import UNDEFINED, BigInt, DataView, JSError, Map, RegExp
from .workspace import Workspace

__version__ = "0.1.0"

__all__ = ["Runner", "Run", "Result", "RunError", "Stats", "ConsoleEntry", "Interruption",
           "CallContext", "call_context", "interrupt", "Interrupt", "JournalEntry", "Client",
           "errors", "AirlockError", "ApiError", "ConfigError", "LibraryNotFound", "BadRequest",
           "Unauthenticated", "Forbidden", "AdhocDisabled", "NotFound", "MethodNotAllowed",
           "Conflict", "VersionNotApproved", "TemplateRevoked", "PayloadTooLarge",
           "InputInvalid", "RateLimited", "ServerError", "BigInt", "Map",
           "RegExp", "JSError", "DataView", "UNDEFINED", "Workspace", "library_version"]


def library_version():
    """libairlock's version ("0.1.0"); LibraryNotFound without the library."""
    from . import _lib
    return _lib.load().al_version().decode()
