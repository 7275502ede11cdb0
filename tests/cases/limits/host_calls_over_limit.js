for (let i = 0; i < 4; i++) await echo.f(i);
return "done";
