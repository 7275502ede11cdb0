// Getters run while encoding; the value is read once and frozen in the answer.
let n = 0;
const v = { get x() { n++; return n; } };
const r = await echo.f(v);
return [r[0].x, n];
