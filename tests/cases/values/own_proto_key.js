// an own __proto__ key stays an own key and pollutes nothing
const v = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}');
const r = await echo.f(v);
const checks = [Object.getPrototypeOf(r[0]) === Object.prototype,
  Object.keys(r[0]).join() === "__proto__,a",
  r[0].polluted === undefined,
  ({}).polluted === undefined,
  r[0].__proto__.polluted === true];
return { checks, wire: v };
