// Depth is bounded: a very deep value fails cleanly rather than crashing the worker.
let v = [];
for (let i = 0; i < 100000; i++) v = [v];
return v;
