const p = echo.f(1);
return [p instanceof Promise, await p];
