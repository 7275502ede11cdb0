// Without --workspace-output every path is read-only.
try { await workspace.writeFile('new.txt', 'x'); return 'written'; } catch (e) { return e.code; }
