// Without --workspace there is no workspace global and no node:fs/promises.
let m;
try { await import('node:fs/promises'); m = 'imported'; } catch (e) { m = e.name; }
return [typeof workspace, m];
