// Even caught, a refused huge allocation ends the run with MEMORY_LIMIT.
try { new ArrayBuffer(2 ** 30); } catch (e) { return "caught " + e.name; }
return "allocated";
