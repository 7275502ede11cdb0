// A module whose import failed can be imported again: it fails the same way, never half-made.
const out = [];
for (let i = 0; i < 2; i++) {
  try { await import("./lib/needs_missing.mjs"); out.push("loaded"); } catch (e) { out.push(e.message); }
}
return out;
