// JSON-compatible data crosses byte for byte as JSON.stringify gives it (checked against node).
return ({"a": [1, "x", null, true, 1.5e300], "b\u2028": "\ud800 \u00e9 \n\u0001\"\\/\t",
  "c": 1e21, "d": 1e-7, "e": 0.1 + 0.2, "": {}, "f": [], "g": "\u{1F600}", "h": -5e-324,
  "nested": {"z": 1, "y": [[], [{}]], "2": "index-like", "1": 0}});
