// A co-process serves only the functions it declared.
try { await echo.undeclared(); return "called"; } catch (e) { return e.name; }
