const r = [];
for (let i = 0; i < 3; i++) r.push(await echo.f(i));
return r;
