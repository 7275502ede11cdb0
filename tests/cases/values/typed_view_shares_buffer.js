// Views over one buffer share it after the crossing
const b = new ArrayBuffer(8); const v = [new Uint8Array(b, 2, 4), new DataView(b, 1, 3), b];
const r = await echo.f(v);
const checks = [r[0][0].buffer === r[0][2],
  r[0][1].buffer === r[0][2],
  r[0][0].byteOffset === 2,
  r[0][0].length === 4,
  r[0][1].byteOffset === 1,
  r[0][1].byteLength === 3];
return { checks, wire: v };
