// Uint8ClampedArray
const v = new Uint8ClampedArray([300, -5]);
const r = await echo.f(v);
const checks = [r[0] instanceof Uint8ClampedArray,
  r[0].length === 2,
  r[0].join() === "255,0"];
return { checks, wire: v };
