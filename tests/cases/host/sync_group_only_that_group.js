// Only the group declared sync is synchronous.
const a = sync.f(1);
const b = echo.f(2);
return [a instanceof Promise, b instanceof Promise, a, await b];
