// escaping is applied at any depth
const v = [{ "$type": "ref", path: [] }];
const r = await echo.f(v);
const checks = [Array.isArray(r[0]),
  r[0][0].$type === "ref",
  r[0][0] !== r[0]];
return { checks, wire: v };
