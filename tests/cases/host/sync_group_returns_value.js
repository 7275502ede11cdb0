// A synchronous group returns the value directly, not a Promise.
const v = sync.f(1, "a");
return [v instanceof Promise, v];
