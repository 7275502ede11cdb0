// A frame inside a native builtin (Array.prototype.map) is not shown.
[1, 2].map((x) => {
  if (x === 2) {
    throw new Error("in callback");
  }
  return x;
});
