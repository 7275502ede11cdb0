// BUG: the exec host's output-limit error can be caught and the run completes.
try { await big.f(); } catch (e) { console.log("caught:", e.message); }
return "escaped";
