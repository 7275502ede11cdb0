// '..' past the root is refused before anything is looked up.
try { await workspace.readFile('docs/../../../etc/passwd'); return 'read'; } catch (e) { return [e.code, e.message]; }
