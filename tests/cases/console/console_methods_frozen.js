"use strict";
const r = [];
try { console.log = () => {}; } catch (e) { r.push(e.name); }
try { console.table = () => {}; } catch (e) { r.push(e.name); }
r.push(Object.keys(console).sort().join());
return r;
