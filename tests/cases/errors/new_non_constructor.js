// `new` of something that is not a constructor names it.
const foo = { bar: () => 1, n: 2 };
let msgs = [];
try { new foo.bar(); } catch (e) { msgs.push(e.message); }
try { new foo.n; } catch (e) { msgs.push(e.message); }
try { new foo.bar(...[1, 2]); } catch (e) { msgs.push(e.message); }
return msgs;
