// Unsupported syntax: the SyntaxError names the ES feature.
return new RegExp("[\\p{L}--[a-z]]", "v").test("A");
