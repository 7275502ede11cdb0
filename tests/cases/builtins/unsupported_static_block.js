// Unsupported syntax: the SyntaxError names the ES feature.
class A { static { this.x = 1; } }
return A.x;
