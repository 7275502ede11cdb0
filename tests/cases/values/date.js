// Date, also an invalid one
const v = [new Date(0), new Date(Date.UTC(2024, 1, 29, 12, 30, 15, 123)), new Date(NaN)];
const r = await echo.f(v);
const checks = [r[0][0] instanceof Date,
  r[0][0].getTime() === 0,
  r[0][1].getTime() === v[1].getTime(),
  Number.isNaN(r[0][2].getTime())];
return { checks, wire: v };
