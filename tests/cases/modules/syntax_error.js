// A module with a syntax error: a SyntaxError naming the module and the position.
try { await import("./bad.mjs"); } catch (e) { return [e.name, e.message]; }
