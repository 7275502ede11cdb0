// BUG: a caught stack overflow lets the run complete (engine.c: "the guest cannot catch it").
function f() { return f() + 1; }
try { f(); } catch (e) { console.log("caught", e.name); }
return "escaped";
