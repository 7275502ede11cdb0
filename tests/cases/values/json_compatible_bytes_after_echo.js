// ... also after a round trip through a host.
const v = ({"a": [1, "x", null, true, 1.5e300], "b\u2028": "\ud800 \u00e9 \n\u0001\"\\/\t",
  "c": 1e21, "d": 1e-7, "e": 0.1 + 0.2, "": {}, "f": [], "g": "\u{1F600}", "h": -5e-324,
  "nested": {"z": 1, "y": [[], [{}]], "2": "index-like", "1": 0}});
const r = await echo.f(v);
return [JSON.stringify(r[0]) === JSON.stringify(v), r[0]];
