// Argument count and positions are kept, undefined included.
const r = await echo.f(1, undefined);
const s = await echo.f(undefined, undefined, 3);
const t = await echo.f();
return [r.length, r[1] === undefined, 1 in r, s.length, s[2], t.length, r];
