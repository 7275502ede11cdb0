// Reading a member of undefined names the expression that was undefined.
const o = { foo: {} };
return o.foo.missing.bar;
