"""The boundary-JSON codec both ways: through a real run (guest -> Python for results, Python
-> guest for host answers) and the exact texts of docs/values.md."""
import array
import datetime as dt
import decimal
import math

import airlock
from airlock import values


def test_guest_values_decode(runner):
    r = runner.run("""
        const b = new ArrayBuffer(3); new Uint8Array(b).set([1, 2, 3]);
        const shared = {n: 1};
        return {n: 1.5, s: "é", nul: null, und: undefined, nan: NaN, inf: -Infinity,
                negz: -0, big: 12345678901234567890n, date: new Date(0), bad: new Date(NaN),
                re: /a\\/b/gi, set: new Set([1, "a"]), map: new Map([[1, {a: 1}], ["k", 2]]),
                u8: new Uint8Array([1, 2, 3]), ab: b, i32: new Int32Array([-1, 7]),
                err: new TypeError("bad"), sparse: [1, , 3], shared: [shared, shared],
                escaped: {$type: "date", value: 1}};
    """)
    assert r.status == "completed", r.error
    v = r.value
    assert v["n"] == 1.5 and v["s"] == "é" and v["nul"] is None and v["und"] is None
    assert "und" in v
    assert math.isnan(v["nan"]) and v["inf"] == -math.inf
    assert v["negz"] == 0 and math.copysign(1, v["negz"]) < 0
    assert v["big"] == 12345678901234567890 and isinstance(v["big"], airlock.BigInt)
    assert v["date"] == dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    assert v["bad"] is None
    assert v["re"] == airlock.RegExp("a\\/b", "gi")
    assert v["set"] == {1, "a"}
    assert isinstance(v["map"], airlock.Map) and v["map"] == {1: {"a": 1}, "k": 2}
    assert v["u8"] == b"\x01\x02\x03" and v["ab"] == b"\x01\x02\x03"
    assert v["i32"] == array.array("i", [-1, 7])
    assert isinstance(v["err"], airlock.JSError) and v["err"].name == "TypeError"
    assert v["err"].message == "bad"
    assert v["sparse"] == [1, None, 3]
    assert v["shared"][0] is v["shared"][1]
    assert v["escaped"] == {"$type": "date", "value": 1}


def test_python_values_reach_the_guest(runner):
    sent = {"big": airlock.BigInt(5), "huge": 2 ** 70, "dec": decimal.Decimal("42"),
            "when": dt.datetime(2024, 2, 29, 12, 0, 0, 123000, tzinfo=dt.timezone.utc),
            "naive": dt.datetime(2024, 1, 1), "bytes": b"\x00\xff", "ab": bytearray(b"ab"),
            "set": {1, 2}, "map": airlock.Map({1: "one"}), "nan": math.nan, "inf": math.inf,
            "negz": -0.0, "undef": airlock.UNDEFINED, "none": None, "tuple": (1, 2),
            "re": airlock.RegExp("x+", "g"), "err": ValueError("no"),
            "f64": array.array("d", [0.5]), "dollar": {"$type": "x"}}
    r = runner.run("""
        const v = await py.get();
        return [typeof v.big, v.big === 5n, v.huge === 2n ** 70n, v.dec === 42n,
                v.when instanceof Date && v.when.toISOString(), v.naive.toISOString(),
                v.bytes instanceof Uint8Array && Array.from(v.bytes).join(","),
                v.ab instanceof ArrayBuffer && v.ab.byteLength,
                v.set instanceof Set && v.set.has(2), v.map instanceof Map && v.map.get(1),
                Number.isNaN(v.nan), v.inf === Infinity, Object.is(v.negz, -0),
                "undef" in v && v.undef === undefined, v.none === null, v.tuple.length,
                v.re instanceof RegExp && v.re.flags, v.err instanceof Error && v.err.message,
                v.err.name, v.f64 instanceof Float64Array && v.f64[0], v.dollar.$type];
    """, host={"py.get": lambda: sent})
    assert r.status == "completed", r.error
    assert r.value == ["bigint", True, True, True, "2024-02-29T12:00:00.123Z",
                       "2024-01-01T00:00:00.000Z", "0,255", 2, True, "one", True, True, True,
                       True, True, 2, "g", "no", "ValueError", 0.5, "x"]


def test_round_trip_through_the_guest(runner):
    data = {"a": [1, 2.5, "x", None, True], "s": {3}, "b": b"hi", "big": airlock.BigInt(-7)}
    r = runner.run("return await py.get();", host={"py.get": lambda: data})
    assert r.value == data


def test_codec_texts():
    assert values.encode({"a": [1, None]}) == '{"a":[1,null]}'
    assert values.encode(math.nan) == '{"$type":"number","value":"NaN"}'
    assert values.encode(2 ** 60) == '{"$type":"bigint","value":"1152921504606846976"}'
    assert values.encode(2 ** 53) == "9007199254740992"
    assert values.encode({"$type": 1}) == '{"$type":"object","value":{"$type":1}}'
    a = {}
    a["self"] = a
    assert values.encode(a) == '{"self":{"$type":"ref","path":[]}}'
    d = values.decode('{"self":{"$type":"ref","path":[]}}')
    assert d["self"] is d
    assert values.decode('{"$type":"array","length":3,"items":{"0":1,"2":3}}') == [1, None, 3]
    try:
        values.encode(object())
    except TypeError as e:
        assert "cannot encode object at value" in str(e)
    else:
        raise AssertionError("object() encoded")
