// NaN
const v = NaN;
const r = await echo.f(v);
const checks = [Number.isNaN(r[0])];
return { checks, wire: v };
