// A Proxy is read through its traps like a plain object or fails cleanly, never crashes.
const v = new Proxy({ a: 1 }, {});
const r = await echo.f(v);
return r;
