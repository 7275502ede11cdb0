// Unsupported syntax: the SyntaxError names the ES feature.
class A { #x = 1; static has(o) { return #x in o; } }
return A.has(new A());
