// holes stay holes
const v = [1, , 3]; v[10] = 5;
const r = await echo.f(v);
const checks = [r[0].length === 11,
  !(1 in r[0]),
  r[0][2] === 3,
  r[0][10] === 5,
  Object.keys(r[0]).join() === "0,2,10"];
return { checks, wire: v };
