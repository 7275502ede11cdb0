// Nesting well inside the stack limit still parses (the overflow check only trips on overflow).
const text = "[".repeat(500) + "7" + "]".repeat(500);
let v = JSON.parse(text);
let depth = 0;
while (Array.isArray(v)) { v = v[0]; depth++; }
return [depth, v, new RegExp("(?:".repeat(200) + "a" + ")".repeat(200)).test("a")];
