const o = { a: 1 }; let r: boolean; for (r = ("a" in o) as boolean; false;) {} return r
