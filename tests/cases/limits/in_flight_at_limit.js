const a = await Promise.all([1, 2].map((i) => echo.f(i)));
const b = await Promise.all([3, 4].map((i) => echo.f(i)));
return [a, b];
