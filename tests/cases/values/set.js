// Set keeps insertion order
const v = new Set([3, "x", 1]);
const r = await echo.f(v);
const checks = [r[0] instanceof Set,
  JSON.stringify([...r[0]]) === JSON.stringify([3, "x", 1])];
return { checks, wire: v };
