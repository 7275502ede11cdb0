const f = function <T>(this: void, x: T): T { return x }; return f(5)
