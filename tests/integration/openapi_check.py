"""Checks airlockd's answers against its OpenAPI document (src/server/openapi.json).

validate(method, concrete_path, status, body_json) finds the operation the request went to
(a literal path before a templated one, as OpenAPI says), the response for the status (or the
operation's "default"), and validates the body against that response's application/json schema
with JSON Schema 2020-12; it raises Mismatch saying what did not fit. A path the document does
not have must have been answered 404, a method it does not have 405, both with the error body.

Works with Debian bookworm's python3-jsonschema (4.10) and later ones: "$ref"s point into the
document ("#/components/..."), so each schema is validated as a root that carries the
document's components next to it.
"""
import json
import os
import re

import jsonschema

DOC_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "server",
                        "openapi.json")
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

_doc = None
_routes = None
_validators = {}


class Mismatch(Exception):
    pass


def document():
    global _doc, _routes
    if _doc is None:
        with open(DOC_PATH, encoding="utf-8") as f:
            _doc = json.load(f)
        _routes = []
        for path in _doc["paths"]:
            params = len(re.findall(r"\{[^}]+\}", path))
            # {name+} takes the rest of the path, slashes included (a run's file)
            rx = "^" + "".join(".+" if part.endswith("+}") else "[^/]+" if part.startswith("{")
                               else re.escape(part)
                               for part in re.split(r"(\{[^}]+\})", path)) + "$"
            _routes.append((params, path, re.compile(rx)))
        _routes.sort(key=lambda r: r[0])
    return _doc


def resolve(obj):
    """Follows a local "$ref" (of a response, parameter, ...) to what it names."""
    seen = 0
    while isinstance(obj, dict) and "$ref" in obj and seen < 16:
        ref = obj["$ref"]
        if not ref.startswith("#/"):
            raise Mismatch("not a local reference: %r" % ref)
        obj = document()
        for part in ref[2:].split("/"):
            obj = obj[part.replace("~1", "/").replace("~0", "~")]
        seen += 1
    return obj


def validator(schema):
    """A 2020-12 validator of `schema` that resolves the document's "#/components/..."."""
    key = json.dumps(schema, sort_keys=True)
    v = _validators.get(key)
    if v is None:
        root = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                "allOf": [schema], "components": document()["components"]}
        v = jsonschema.Draft202012Validator(root)
        _validators[key] = v
    return v


def find(concrete_path):
    """The document's path template for a request path (query dropped), or None."""
    document()
    path = concrete_path.split("?", 1)[0]
    for _, template, rx in _routes:
        if rx.match(path):
            return template
    return None


def _check(schema, body, what):
    errors = sorted(validator(schema).iter_errors(body), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        raise Mismatch("%s: at %s: %s; body %s" % (what, where, e.message,
                                                    json.dumps(body)[:400]))


def validate(method, concrete_path, status, body_json):
    doc = document()
    what = "%s %s -> %d" % (method, concrete_path, status)
    template = find(concrete_path)
    if template is None:
        if status != 404:
            raise Mismatch("%s: the path is not in the document (only 404 may answer it)" % what)
        return _check(resolve({"$ref": "#/components/responses/NotFound"})["content"]
                      ["application/json"]["schema"], body_json, what)
    op = doc["paths"][template].get(method.lower())
    if op is None:
        if status != 405:
            raise Mismatch("%s: %s has no %s in the document (only 405 may answer it)"
                           % (what, template, method))
        return _check(resolve({"$ref": "#/components/responses/MethodNotAllowed"})["content"]
                      ["application/json"]["schema"], body_json, what)
    responses = op["responses"]
    response = responses.get(str(status), responses.get("default"))
    if response is None:
        raise Mismatch("%s: status %d is not documented for %s %s" % (what, status, method,
                                                                      template))
    response = resolve(response)
    media = response.get("content", {}).get("application/json")
    if media is None:
        raise Mismatch("%s: the document's %s %s %d answer is not application/json"
                       % (what, method, template, status))
    _check(media["schema"], body_json, what + " (" + template + ")")
