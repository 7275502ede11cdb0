// A symlink inside the root that points outside it is refused.
try { await import("./outside.mjs"); return "loaded"; } catch (e) { return e.message; }
