// A host call with a function argument fails before reaching the host.
try { await echo.f(() => 1); return "sent"; } catch (e) { return [e.name, e.message]; }
