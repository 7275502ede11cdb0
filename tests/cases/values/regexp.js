// RegExp with source and flags
const v = /a+\/b["]/gimsuy;
const r = await echo.f(v);
const checks = [r[0] instanceof RegExp,
  r[0].source === v.source,
  r[0].flags === v.flags,
  r[0].test("aa/b\"")];
return { checks, wire: v };
