// Map with non-string keys, nested values and order kept
const v = new Map([[1, { a: 2 }], ["k", undefined], [{ o: 1 }, [1n]]]);
const r = await echo.f(v);
const checks = [r[0] instanceof Map,
  r[0].size === 3,
  r[0].get(1).a === 2,
  r[0].has("k") && r[0].get("k") === undefined,
  JSON.stringify([...r[0].keys()]) === JSON.stringify([1, "k", { o: 1 }])];
return { checks, wire: v };
