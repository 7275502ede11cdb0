// An answer that is not valid boundary JSON makes the call throw, it never crashes the run.
try { await bad.f(); return "no error"; } catch (e) { return e.name; }
