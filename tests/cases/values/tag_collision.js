// a guest object that looks like a tag is escaped, not decoded
const v = { "$type": "undefined" };
const r = await echo.f(v);
const checks = [typeof r[0] === "object",
  r[0].$type === "undefined"];
return { checks, wire: v };
