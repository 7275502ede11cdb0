// Arguments are encoded at call time: changing them afterwards changes nothing.
const arg = { n: 1 };
const p = echo.f(arg);
arg.n = 2;
return await p;
