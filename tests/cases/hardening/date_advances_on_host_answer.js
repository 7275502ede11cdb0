// The guest clock moves only when a host call is answered, to the time of the answer.
const a = Date.now();
await sl.f();
const b = Date.now();
return [b - a >= 150, b - a < 10000];
