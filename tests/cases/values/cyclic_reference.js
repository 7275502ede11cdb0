// cycles survive
const v = { n: "c" }; v.self = v; v.list = [v];
const r = await echo.f(v);
const checks = [r[0].self === r[0],
  r[0].list[0] === r[0]];
return { checks, wire: v };
