// AggregateError keeps its errors
const v = new AggregateError([new RangeError("x"), 1], "agg");
const r = await echo.f(v);
const checks = [r[0] instanceof AggregateError,
  r[0].message === "agg",
  r[0].errors.length === 2,
  r[0].errors[0] instanceof RangeError,
  r[0].errors[0].message === "x",
  r[0].errors[1] === 1];
return { checks, wire: v };
