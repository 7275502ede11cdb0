const s = await Promise.allSettled([echo.f(1), h.f()]);
const pa = [h.f(), echo.f(2)];
const a = await Promise.any(pa);
await Promise.allSettled(pa);
return [s.map((x) => x.status), a];
