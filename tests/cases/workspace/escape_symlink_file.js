// A symbolic link to a file outside is never read.
try { await workspace.readFile('docs/passwd'); return 'read'; } catch (e) { return e.code; }
