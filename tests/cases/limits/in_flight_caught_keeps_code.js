try { await Promise.all([1, 2, 3, 4, 5].map((i) => echo.f(i))); } catch (e) {}
return "escaped";
