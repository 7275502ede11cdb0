// An absolute path outside the root is refused.
try { await workspace.readFile('/etc/passwd'); return 'read'; } catch (e) { return e.code; }
