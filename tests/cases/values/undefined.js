// undefined crosses as itself, also inside arrays and objects
const v = undefined;
const r = await echo.f(v);
const checks = [r.length === 1,
  r[0] === undefined,
  0 in r];
return { checks, wire: v };
