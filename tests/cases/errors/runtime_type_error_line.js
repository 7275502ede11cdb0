// a TypeError thrown in f (line 4), called from line 7
const x = null;
function f() {
  return x.prop;
}

f();
