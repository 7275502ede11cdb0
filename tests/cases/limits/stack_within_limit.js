function f(n) { return n === 0 ? 0 : 1 + f(n - 1); }
return f(1000);
