// A host function cannot be used with new and has no prototype object to pollute.
const r = [];
try { new store.get(); r.push("constructed"); } catch (e) { r.push(e.name); }
r.push(typeof store.get.prototype);
return r;
