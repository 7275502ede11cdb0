// Unsupported syntax: the SyntaxError names the ES feature.
const m = /a(b)/d.exec("ab");
return m.indices;
