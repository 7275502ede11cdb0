// ArrayBuffer bytes
const v = new ArrayBuffer(4); new Uint8Array(v).set([1, 2, 3, 255]);
const r = await echo.f(v);
const checks = [r[0] instanceof ArrayBuffer,
  r[0].byteLength === 4,
  new Uint8Array(r[0]).join() === "1,2,3,255"];
return { checks, wire: v };
