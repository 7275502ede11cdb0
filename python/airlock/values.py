"""The boundary-JSON codec (docs/values.md) between guest values and Python values.

    guest                        Python (decode)                 encodes back as
    null / undefined             None                            null (UNDEFINED: undefined)
    true, 1.5, "s", [..], {..}   bool, int/float, str, list, dict  the same
    NaN, Infinity, -0            float('nan'), inf, -0.0         number tag
    123n                         BigInt (an int subclass)        bigint tag (any int beyond
                                                                 +-2**53, an integral Decimal)
    Date                         datetime (UTC); invalid: None   date tag (naive means UTC)
    Uint8Array, ArrayBuffer      bytes                           Uint8Array (bytearray: ArrayBuffer)
    other typed arrays           array.array                     the typed array of its typecode
    DataView                     DataView (bytes)                DataView
    Set / Map                    set / Map (a dict subclass)     set tag / map tag
    RegExp                       RegExp(source, flags)           regexp tag
    Error                        JSError (an Exception)          error tag (any exception)
    a shared object or a cycle   the same Python object          a ref tag

Decoding follows references to the same object; encoding writes a ref for an object met twice.
Set members and Map keys that are unhashable in Python (lists, dicts, sets) become tuples,
tuples of items and frozensets. Nothing here calls libairlock: the worker checks whatever it is
sent, so this module only needs to write what docs/values.md allows.
"""
import array
import base64
import collections
import datetime as _dt
import decimal
import json
import math

__all__ = ["decode", "encode", "BigInt", "Map", "RegExp", "JSError", "DataView", "UNDEFINED"]

SAFE_INT = 2 ** 53


class BigInt(int):
    """A JavaScript BigInt: an int that encodes back as a BigInt."""

    def __repr__(self):
        return "BigInt(%d)" % int(self)


class Map(dict):
    """A JavaScript Map: a dict that encodes back as a Map (keys of any type)."""


class DataView(bytes):
    """A JavaScript DataView: the bytes it views."""


RegExp = collections.namedtuple("RegExp", "source flags")


class JSError(Exception):
    """A guest Error value: name, message, and cause/errors when it had them."""

    def __init__(self, name="Error", message="", cause=None, errors=None):
        super().__init__("%s: %s" % (name, message) if message else name)
        self.name = name
        self.message = message
        self.cause = cause
        self.errors = errors

    def __eq__(self, other):
        return (isinstance(other, JSError) and (self.name, self.message, self.cause,
                                                self.errors) ==
                (other.name, other.message, other.cause, other.errors))

    __hash__ = Exception.__hash__


class _Undefined:
    """Encodes as undefined (decoding gives None)."""

    _it = None

    def __new__(cls):
        if cls._it is None:
            cls._it = super().__new__(cls)
        return cls._it

    def __repr__(self):
        return "UNDEFINED"

    def __bool__(self):
        return False


UNDEFINED = _Undefined()

# typed array name <-> array.array typecode (Linux: i/I are 4 bytes, q/Q 8)
_TYPED = {"Int8Array": "b", "Uint8ClampedArray": "B", "Int16Array": "h", "Uint16Array": "H",
          "Int32Array": "i", "Uint32Array": "I", "Float32Array": "f", "Float64Array": "d",
          "BigInt64Array": "q", "BigUint64Array": "Q"}
_BY_CODE = {"b": "Int8Array", "B": "Uint8ClampedArray", "h": "Int16Array", "H": "Uint16Array",
            "f": "Float32Array", "d": "Float64Array"}
for _code in "iIlLqQ":
    _size = array.array(_code).itemsize
    _signed = _code.islower()
    _BY_CODE[_code] = {(4, True): "Int32Array", (4, False): "Uint32Array",
                       (8, True): "BigInt64Array", (8, False): "BigUint64Array"}[(_size, _signed)]


# ---------------------------------------------------------------------------------- decoding

def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple((_freeze(k), _freeze(x)) for k, x in v.items())
    if isinstance(v, set):
        return frozenset(v)
    return v


def _hashable(v):
    try:
        hash(v)
        return v
    except TypeError:
        return _freeze(v)


class _Decoder:
    def __init__(self):
        self.seen = {}

    def node(self, n, path):
        if isinstance(n, list):
            out = []
            self.seen[path] = out
            for i, x in enumerate(n):
                out.append(self.node(x, path + (i,)))
            return out
        if not isinstance(n, dict):
            return n
        if "$type" not in n:
            out = {}
            self.seen[path] = out
            for k, x in n.items():
                out[k] = self.node(x, path + (k,))
            return out
        return self.tag(n["$type"], n, path)

    def tag(self, t, n, path):
        if t == "undefined":
            return None
        if t == "number":
            return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf,
                    "-0": -0.0}[n["value"]]
        if t == "bigint":
            return BigInt(int(n["value"]))
        if t == "ref":
            key = tuple(n["path"])
            if key not in self.seen:
                raise ValueError("reference to nothing: %r" % (n["path"],))
            return self.seen[key]
        if t == "object":
            out = {}
            self.seen[path] = out
            for k, x in n["value"].items():
                out[k] = self.node(x, path + ("value", k))
            return out
        if t == "array":
            out = [None] * n["length"]
            self.seen[path] = out
            for k, x in n["items"].items():
                out[int(k)] = self.node(x, path + ("items", k))
            return out
        if t == "set":
            out = set()
            self.seen[path] = out
            for i, x in enumerate(n["values"]):
                out.add(_hashable(self.node(x, path + ("values", i))))
            return out
        if t == "map":
            out = Map()
            self.seen[path] = out
            for i, (k, x) in enumerate(n["entries"]):
                key = _hashable(self.node(k, path + ("entries", i, 0)))
                out[key] = self.node(x, path + ("entries", i, 1))
            return out
        if t == "date":
            out = _parse_date(n["value"])
        elif t == "regexp":
            out = RegExp(n["source"], n["flags"])
        elif t == "arraybuffer":
            out = base64.b64decode(n["base64"])
        elif t == "error":
            out = JSError(n["name"], n["message"])
            self.seen[path] = out
            if "cause" in n:
                out.cause = self.node(n["cause"], path + ("cause",))
            if "errors" in n:
                out.errors = [self.node(x, path + ("errors", i))
                              for i, x in enumerate(n["errors"])]
            return out
        elif t == "DataView" or t == "Uint8Array" or t in _TYPED:
            buf = self.node(n["buffer"], path + ("buffer",))
            off = n["byteOffset"]
            if t == "DataView":
                out = DataView(buf[off:off + n["byteLength"]])
            elif t == "Uint8Array":
                out = bytes(buf[off:off + n["length"]])
            else:
                a = array.array(_TYPED[t])
                a.frombytes(buf[off:off + n["length"] * a.itemsize])
                out = a
        else:
            raise ValueError("unknown tag %r" % (t,))
        self.seen[path] = out
        return out


def _parse_date(s):
    if s is None:
        return None
    try:
        return _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return s  # beyond Python's years 1-9999: the ISO text


def decode(text):
    """Python value of a boundary-JSON text (str or bytes)."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")
    return _Decoder().node(json.loads(text), ())


# ---------------------------------------------------------------------------------- encoding

def _num(x):
    if math.isnan(x):
        return {"$type": "number", "value": "NaN"}
    if math.isinf(x):
        return {"$type": "number", "value": "Infinity" if x > 0 else "-Infinity"}
    if x == 0 and math.copysign(1.0, x) < 0:
        return {"$type": "number", "value": "-0"}
    return x


def _iso(d):
    if isinstance(d, _dt.datetime):
        if d.tzinfo is not None:
            d = d.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    else:
        d = _dt.datetime(d.year, d.month, d.day)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


def _ab(b):
    return {"$type": "arraybuffer", "base64": base64.b64encode(bytes(b)).decode()}


class _Encoder:
    def __init__(self, root):
        self.seen = {}
        self.root = root

    def where(self, path):
        s = self.root
        for p in path:
            s += "[%d]" % p if isinstance(p, int) else ".%s" % p
        return s

    def val(self, v, path):
        if v is None:
            return None
        if v is UNDEFINED:
            return {"$type": "undefined"}
        if isinstance(v, bool) or isinstance(v, str):
            return v
        if isinstance(v, BigInt):
            return {"$type": "bigint", "value": str(int(v))}
        if isinstance(v, int):
            return int(v) if -SAFE_INT <= v <= SAFE_INT else {"$type": "bigint",
                                                               "value": str(int(v))}
        if isinstance(v, float):
            return _num(v)
        if isinstance(v, decimal.Decimal):
            if v.is_finite() and v == v.to_integral_value():
                return {"$type": "bigint", "value": str(int(v))}
            return _num(float(v))
        if isinstance(v, (_dt.datetime, _dt.date)):
            return {"$type": "date", "value": _iso(v)}
        if isinstance(v, RegExp):
            return {"$type": "regexp", "source": v.source, "flags": v.flags}
        if id(v) in self.seen:
            return {"$type": "ref", "path": list(self.seen[id(v)])}
        if isinstance(v, DataView):
            self.seen[id(v)] = path
            return {"$type": "DataView", "buffer": _ab(v), "byteOffset": 0,
                    "byteLength": len(v)}
        if isinstance(v, (bytes, memoryview)):
            self.seen[id(v)] = path
            b = bytes(v)
            return {"$type": "Uint8Array", "buffer": _ab(b), "byteOffset": 0, "length": len(b)}
        if isinstance(v, bytearray):
            self.seen[id(v)] = path
            return _ab(v)
        if isinstance(v, array.array):
            if v.typecode not in _BY_CODE:
                raise TypeError("cannot encode array of typecode %r at %s" % (
                    v.typecode, self.where(path)))
            self.seen[id(v)] = path
            return {"$type": _BY_CODE[v.typecode], "buffer": _ab(v.tobytes()), "byteOffset": 0,
                    "length": len(v)}
        if isinstance(v, Map):
            self.seen[id(v)] = path
            entries = []
            for i, (k, x) in enumerate(v.items()):
                entries.append([self.val(k, path + ("entries", i, 0)),
                                self.val(x, path + ("entries", i, 1))])
            return {"$type": "map", "entries": entries}
        if isinstance(v, dict):
            self.seen[id(v)] = path
            escaped = "$type" in v
            inner = path + ("value",) if escaped else path
            out = {}
            for k, x in v.items():
                if isinstance(k, bool) or not isinstance(k, (str, int, float)):
                    raise TypeError("cannot encode a %s key at %s" % (type(k).__name__,
                                                                      self.where(path)))
                k = k if isinstance(k, str) else str(k)
                out[k] = self.val(x, inner + (k,))
            return {"$type": "object", "value": out} if escaped else out
        if isinstance(v, (list, tuple)):
            self.seen[id(v)] = path
            return [self.val(x, path + (i,)) for i, x in enumerate(v)]
        if isinstance(v, (set, frozenset)):
            self.seen[id(v)] = path
            return {"$type": "set", "values": [self.val(x, path + ("values", i))
                                               for i, x in enumerate(v)]}
        if isinstance(v, BaseException):
            self.seen[id(v)] = path
            if isinstance(v, JSError):
                out = {"$type": "error", "name": v.name, "message": v.message}
                if v.cause is not None:
                    out["cause"] = self.val(v.cause, path + ("cause",))
                if v.errors is not None:
                    out["errors"] = [self.val(x, path + ("errors", i))
                                     for i, x in enumerate(v.errors)]
                return out
            return {"$type": "error", "name": type(v).__name__, "message": str(v)}
        raise TypeError("cannot encode %s at %s" % (type(v).__name__, self.where(path)))


def encode(value, root="value"):
    """Boundary-JSON text (str) of a Python value; TypeError naming the path when it cannot."""
    return json.dumps(_Encoder(root).val(value, ()), ensure_ascii=False,
                      separators=(",", ":"), allow_nan=False)
