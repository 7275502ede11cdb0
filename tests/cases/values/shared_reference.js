// an object met twice is one object after the crossing
const s = { x: 1 }; const v = { a: s, b: [s] };
const r = await echo.f(v);
const checks = [r[0].a === r[0].b[0],
  r[0].a.x === 1];
return { checks, wire: v };
