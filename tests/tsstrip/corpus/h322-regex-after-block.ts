const s = "foo"; let r = 0
if (s) {}
/foo/.test(s) && (r = 1)
return r
