// BigInt of any size
const v = [10n, -(2n ** 70n), 0n];
const r = await echo.f(v);
const checks = [r[0][0] === 10n,
  r[0][1] === -(2n ** 70n),
  typeof r[0][2] === "bigint"];
return { checks, wire: v };
