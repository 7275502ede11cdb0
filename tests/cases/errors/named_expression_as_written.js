// The expression is quoted as written, on one line: comments and line breaks dropped, a space
// kept only between two words, string literals untouched, at most 120 bytes then "...".
const cfg = { list: [] };
let msgs = [];
try {
  cfg /* the config */ . list
    // then
    . first();
} catch (e) { msgs.push(e.message); }
try { cfg["li" + "st"  ].x.y; } catch (e) { msgs.push(e.message); }
try { cfg[" spaced  key "].z; } catch (e) { msgs.push(e.message); }
try { cfg?.list.first(); } catch (e) { msgs.push(e.message); }
try { (await cfg).list.first(); } catch (e) { msgs.push(e.message); }
const a = new Proxy({}, { get: (t, k) => (k === "m" ? undefined : a) });
try {
  a.b.c0123456789.d0123456789.e0123456789.f0123456789.g0123456789.h0123456789.i0123456789.j0123456789.k0123456789.l0123456789.m.n;
} catch (e) { msgs.push(e.message); }
return msgs;
