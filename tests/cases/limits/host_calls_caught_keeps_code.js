let n = 0;
for (let i = 0; i < 6; i++) {
  try { await echo.f(i); n++; } catch (e) { console.log("caught", e.name); }
}
return n;
