// A NUL byte in a path is refused (it would cut a C string).
try { await workspace.readFile('data.csv\u0000/../docs/etc'); return 'read'; } catch (e) { return [e.name, e.code]; }
