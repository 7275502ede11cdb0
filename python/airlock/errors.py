"""The package's exceptions: embedded-mode failures (the library missing, a configuration
refused by libairlock, with its al_code name) and airlockd's error answers, one class per server
error code (docs/server.md "Errors"), each carrying the HTTP status, the code, the message and
the request id the server gave.
"""


class AirlockError(Exception):
    """Base of every exception of the package. `code` is a stable code name."""

    code = "ERROR"

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class LibraryNotFound(AirlockError, ImportError):
    """libairlock could not be loaded (see airlock._lib for where it is looked for)."""

    code = "LIBRARY_NOT_FOUND"


class ConfigError(AirlockError, ValueError):
    """libairlock refused a setting or a run could not start (code: CONFIG_ERROR, ...)."""

    code = "CONFIG_ERROR"


class ApiError(AirlockError):
    """An error answer of airlockd: {"error":{"code","message","request_id"}}."""

    code = "API_ERROR"

    def __init__(self, status, code, message, request_id=None, body=None):
        super().__init__("%d %s: %s" % (status, code, message), code)
        self.status = status
        self.message = message
        self.request_id = request_id
        self.body = body


class BadRequest(ApiError):
    code = "INVALID_REQUEST"


class Unauthenticated(ApiError):
    code = "UNAUTHENTICATED"


class Forbidden(ApiError):
    code = "FORBIDDEN"


class AdhocDisabled(Forbidden):
    code = "ADHOC_DISABLED"


class NotFound(ApiError):
    code = "NOT_FOUND"


class MethodNotAllowed(ApiError):
    code = "METHOD_NOT_ALLOWED"


class Conflict(ApiError):
    code = "CONFLICT"


class VersionNotApproved(Conflict):
    code = "VERSION_NOT_APPROVED"


class TemplateRevoked(Conflict):
    code = "TEMPLATE_REVOKED"


class PayloadTooLarge(ApiError):
    code = "PAYLOAD_TOO_LARGE"


class InputInvalid(ApiError):
    code = "INPUT_INVALID"


class RateLimited(ApiError):
    code = "RATE_LIMITED"

    def __init__(self, *args, retry_after=None, **kw):
        super().__init__(*args, **kw)
        self.retry_after = retry_after


class ServerError(ApiError):
    code = "INTERNAL"


BY_CODE = {c.code: c for c in (BadRequest, Unauthenticated, Forbidden, AdhocDisabled, NotFound,
                               MethodNotAllowed, Conflict, VersionNotApproved, TemplateRevoked,
                               PayloadTooLarge, InputInvalid, RateLimited, ServerError)}


def api_error(status, doc, retry_after=None):
    """The exception for an error answer (status, parsed body or None)."""
    err = doc.get("error") if isinstance(doc, dict) else None
    if not isinstance(err, dict):
        return ApiError(status, "HTTP_%d" % status, "unexpected answer: %r" % (doc,), body=doc)
    code = str(err.get("code", "HTTP_%d" % status))
    cls = BY_CODE.get(code, ApiError)
    kw = {"request_id": err.get("request_id"), "body": doc}
    if cls is RateLimited:
        kw["retry_after"] = retry_after
    return cls(status, code, str(err.get("message", "")), **kw)
