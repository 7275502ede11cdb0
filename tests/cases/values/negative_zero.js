// -0 keeps its sign; 0 stays plain
const v = [-0, 0];
const r = await echo.f(v);
const checks = [Object.is(r[0][0], -0),
  Object.is(r[0][1], 0)];
return { checks, wire: v };
