function f() { throw new Error("in f"); }
f();
