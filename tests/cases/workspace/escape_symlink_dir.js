// A symbolic link to /etc inside the directory is never followed.
try { await workspace.readFile('docs/etc/passwd'); return 'read'; } catch (e) { return e.code; }
