const r = [];
for (let i = 0; i < 5; i++) r.push((await echo.f(i))[0]);
return r;
