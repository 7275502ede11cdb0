const o = { a: { b: undefined } }; const f = 1; function C() {} let at = []; try { o.a.b.c; } catch (e) { at.push(e.stack); }
// Naming the expression changes messages only: every position below is the one the engine
// reported before (line 1 also checks the wrapper's column correction).
try { o.a.b(); } catch (e) { at.push(e.stack); }
try { f(1, 2); } catch (e) { at.push(e.stack); }
try { new o.a.b(); } catch (e) { at.push(e.stack); }
try { o.a.b[f]; } catch (e) { at.push(e.stack); }
function g() {
  return o.a.b.c.d;
}
try { g(); } catch (e) { at.push(e.stack); }
try {
  o.a
    .b
    .c(
      1,
    );
} catch (e) { at.push(e.stack); }
return at;
