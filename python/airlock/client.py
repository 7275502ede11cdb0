"""Client mode: airlockd's HTTP API (docs/server.md, src/server/openapi.json) with urllib.

One method per route the package covers - templates, versions, approvals, runs, audit, and the
admin routes a setup needs - each returning the parsed JSON answer as is. An error answer
raises the airlock.errors class of its code (NotFound, Conflict, InputInvalid, ...) carrying the
status, code, message and request id.
"""
import json
import time
import urllib.error
import urllib.parse
import urllib.request

from .errors import ApiError, api_error


def _q(s):
    return urllib.parse.quote(str(s), safe="")


class _Templates:
    """client.templates(): the list; .create, .get, .list."""

    def __init__(self, c):
        self._c = c

    def __call__(self):
        return self._c.request("GET", "/v1/templates")

    list = __call__

    def create(self, name, department, description=""):
        return self._c.create_template(name, department, description)

    def get(self, name):
        return self._c.template(name)


class _Versions:
    """client.versions.create/get/submit/approve/reject/revoke/diff(template, version, ...)."""

    def __init__(self, c):
        self._c = c

    def create(self, template, source, **kw):
        return self._c.create_version(template, source, **kw)

    def get(self, template, version):
        return self._c.version(template, version)

    def submit(self, template, version):
        return self._c.submit(template, version)

    def approve(self, template, version, comment=""):
        return self._c.approve_version(template, version, comment)

    def reject(self, template, version, comment=""):
        return self._c.reject_version(template, version, comment)

    def revoke(self, template, version, reason=""):
        return self._c.revoke_version(template, version, reason)

    def diff(self, template, version, from_version=None):
        return self._c.diff(template, version, from_version)


class _Runs:
    """client.runs(...): the list; .start, .start_source, .get, .list, .cancel, .wait."""

    def __init__(self, c):
        self._c = c

    def __call__(self, template=None, status=None, after=None, limit=None):
        return self._c.request("GET", "/v1/runs", query={"template": template, "status": status,
                                                         "after": after, "limit": limit})

    list = __call__

    def start(self, template, input=None, version=None, wait=True):
        return self._c.run(template, input, version, wait)

    def start_source(self, source, department, **kw):
        return self._c.run_source(source, department, **kw)

    def get(self, run_id):
        return self._c.get_run(run_id)

    def cancel(self, run_id):
        return self._c.cancel_run(run_id)

    def wait(self, run_id, **kw):
        return self._c.wait_run(run_id, **kw)


class _Approvals:
    """client.approvals(status): the list; .list, .approve, .deny, .answer."""

    def __init__(self, c):
        self._c = c

    def __call__(self, status="pending"):
        return self._c.request("GET", "/v1/approvals", query={"status": status})

    list = __call__

    def approve(self, approval_id, comment=None):
        return self._c.approve(approval_id, comment)

    def deny(self, approval_id, comment=None):
        return self._c.deny(approval_id, comment)

    def answer(self, approval_id, result, comment=None):
        return self._c.answer(approval_id, result, comment)


class _Audit:
    """client.audit(...): a page of records; .list, .export, .verify, .checkpoint."""

    def __init__(self, c):
        self._c = c

    def __call__(self, after=None, limit=None, run=None, template=None, action=None):
        return self._c.request("GET", "/v1/audit", query={"after": after, "limit": limit,
                                                          "run": run, "template": template,
                                                          "action": action})

    list = __call__

    def export(self):
        return self._c.audit_export()

    def verify(self):
        return self._c.audit_verify()

    def checkpoint(self):
        return self._c.audit_checkpoint()


class Client:
    """airlockd at `url` ("http://127.0.0.1:8080") as the principal holding `key`.

    Flat methods (create_template, run, approve, audit_verify, ...) and the same calls grouped
    by resource: client.templates, .versions, .runs, .approvals, .audit (the first four lists
    are also what calling the group gives: client.runs(status="completed"))."""

    def __init__(self, url, key, timeout=60.0):
        self.url = url.rstrip("/")
        self.key = key
        self.timeout = timeout
        self.templates = _Templates(self)
        self.versions = _Versions(self)
        self.runs = _Runs(self)
        self.approvals = _Approvals(self)
        self.audit = _Audit(self)

    # ------------------------------------------------------------------ transport
    def request(self, method, path, body=None, query=None, raw=False):
        """The parsed answer of one request (raw=True: the body's bytes)."""
        url = self.url + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        data = None
        headers = {"Authorization": "Bearer " + self.key, "Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        elif method in ("POST", "PUT"):
            data = b""
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                text = r.read()
                ctype = r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            text = e.read()
            try:
                doc = json.loads(text) if text else None
            except ValueError:
                doc = None
            raise api_error(e.code, doc, e.headers.get("Retry-After")) from None
        if raw:
            return text
        if ctype.startswith("application/x-ndjson"):
            return [json.loads(line) for line in text.decode().splitlines() if line]
        if ctype.startswith("text/plain"):
            return text.decode()
        return json.loads(text) if text else None

    # ------------------------------------------------------------------ who and setup
    def me(self):
        return self.request("GET", "/v1/me")

    def create_department(self, name):
        return self.request("POST", "/v1/departments", {"name": name})

    def set_policy(self, department, autonomy=None, allow_adhoc=None):
        body = {k: v for k, v in (("autonomy", autonomy), ("allow_adhoc", allow_adhoc))
                if v is not None}
        return self.request("PUT", "/v1/departments/%s/policy" % _q(department), body)

    def create_principal(self, name, kind="user"):
        return self.request("POST", "/v1/principals", {"name": name, "kind": kind})

    def grant_role(self, principal, role, department):
        return self.request("POST", "/v1/principals/%s/roles" % _q(principal),
                            {"role": role, "department": department})

    def create_connector(self, **connector):
        """POST /v1/connectors with the connector object (name, department, url, ...)."""
        return self.request("POST", "/v1/connectors", connector)

    # ------------------------------------------------------------------ templates
    def create_template(self, name, department, description=""):
        return self.request("POST", "/v1/templates", {"name": name, "department": department,
                                                      "description": description})

    def template(self, name):
        return self.request("GET", "/v1/templates/%s" % _q(name))

    def create_version(self, template, source, functions=(), input_schema=None, language=None,
                       autonomy=None, limits=None):
        body = {"source": source, "functions": list(functions)}
        for k, v in (("input_schema", input_schema), ("language", language),
                     ("autonomy", autonomy), ("limits", limits)):
            if v is not None:
                body[k] = v
        return self.request("POST", "/v1/templates/%s/versions" % _q(template), body)

    def version(self, template, version):
        return self.request("GET", "/v1/templates/%s/versions/%d" % (_q(template), version))

    def _move(self, template, version, verb, body=None):
        return self.request("POST", "/v1/templates/%s/versions/%d/%s" % (_q(template), version,
                                                                         verb), body)

    def submit(self, template, version):
        return self._move(template, version, "submit")

    def approve_version(self, template, version, comment=""):
        return self._move(template, version, "approve", {"comment": comment})

    def reject_version(self, template, version, comment=""):
        return self._move(template, version, "reject", {"comment": comment})

    def revoke_version(self, template, version, reason=""):
        return self._move(template, version, "revoke", {"reason": reason})

    def diff(self, template, version, from_version=None):
        return self.request("GET", "/v1/templates/%s/versions/%d/diff" % (_q(template), version),
                            query={"from": from_version})

    # ------------------------------------------------------------------ runs
    def run(self, template, input=None, version=None, wait=True):
        """POST /v1/runs of a template: the run object (completed, failed, or
        awaiting_approval with its approval ids)."""
        body = {"template": template}
        if input is not None:
            body["input"] = input
        if version is not None:
            body["version"] = version
        if not wait:
            body["wait"] = False
        return self.request("POST", "/v1/runs", body)

    def run_source(self, source, department, functions=(), input=None, language=None,
                   wait=True):
        """An ad-hoc run (the department must allow them)."""
        body = {"source": source, "department": department, "functions": list(functions)}
        if input is not None:
            body["input"] = input
        if language is not None:
            body["language"] = language
        if not wait:
            body["wait"] = False
        return self.request("POST", "/v1/runs", body)

    def get_run(self, run_id):
        return self.request("GET", "/v1/runs/%s" % _q(run_id))

    def cancel_run(self, run_id):
        return self.request("POST", "/v1/runs/%s/cancel" % _q(run_id))

    def wait_run(self, run_id, statuses=("completed", "failed", "cancelled", "denied"),
                 timeout=60.0, interval=0.05):
        """Polls GET /v1/runs/{id} until its status is one of `statuses`."""
        deadline = time.monotonic() + timeout
        while True:
            doc = self.get_run(run_id)
            if doc["status"] in statuses:
                return doc
            if time.monotonic() >= deadline:
                raise ApiError(0, "TIMEOUT", "run %s still %s after %.1f s" % (
                    run_id, doc["status"], timeout))
            time.sleep(interval)

    # ------------------------------------------------------------------ approvals
    def approve(self, approval_id, comment=None):
        return self.request("POST", "/v1/approvals/%s/approve" % _q(approval_id),
                            {} if comment is None else {"comment": comment})

    def deny(self, approval_id, comment=None):
        return self.request("POST", "/v1/approvals/%s/deny" % _q(approval_id),
                            {} if comment is None else {"comment": comment})

    def answer(self, approval_id, result, comment=None):
        """A call in doubt (kind in_doubt) returns `result` (JSON) to the guest; nothing is
        sent. ApiError 409 for an approval of another kind."""
        body = {"result": result}
        if comment is not None:
            body["comment"] = comment
        return self.request("POST", "/v1/approvals/%s/answer" % _q(approval_id), body)

    # ------------------------------------------------------------------ audit
    def audit_export(self):
        """Every record and the closing checkpoint, as a list of dicts."""
        return self.request("GET", "/v1/audit/export")

    def audit_verify(self):
        return self.request("GET", "/v1/audit/verify")

    def audit_checkpoint(self):
        return self.request("GET", "/v1/audit/checkpoint")
