try { await echo.big(); } catch (e) {}
return "escaped";
