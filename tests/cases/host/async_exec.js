// An exec host call returns a Promise that resolves to the command's output.
const p = echo.f(1, "two", { three: 3 });
const isPromise = p instanceof Promise;
return [isPromise, await p];
