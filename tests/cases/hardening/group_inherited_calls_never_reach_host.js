// Calling inherited names on a group never dispatches to the host (the host fails loudly).
const r = [];
for (const k of ["constructor", "__proto__", "toString", "hasOwnProperty", "then", "valueOf"]) {
  try { await store[k]("x"); r.push(k + ": no host"); } catch (e) { r.push(k + ": " + e.name); }
}
return r;
