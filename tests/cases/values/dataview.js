// DataView
const v = new DataView(new ArrayBuffer(4)); v.setInt16(0, -2);
const r = await echo.f(v);
const checks = [r[0] instanceof DataView,
  r[0].getInt16(0) === -2,
  r[0].byteLength === 4];
return { checks, wire: v };
