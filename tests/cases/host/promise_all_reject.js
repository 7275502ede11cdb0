try { await Promise.all([echo.f(1), h.f()]); return "no error"; } catch (e) { return e.message; }
