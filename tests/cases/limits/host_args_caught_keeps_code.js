try { await echo.f("x".repeat(2000)); } catch (e) {}
return "escaped";
