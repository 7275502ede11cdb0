// The workspace global and its functions cannot be replaced or changed.
'use strict';
const r = [];
try { workspace.readFile = () => 'forged'; } catch (e) { r.push(e.name); }
try { globalThis.workspace = {}; } catch (e) { r.push(e.name); }
try { workspace.readFile.x = 1; } catch (e) { r.push(e.name); }
r.push(Object.isFrozen(workspace), await workspace.readFile('docs/policy.md'));
return r;
