const s = "<div>"; if (/<div>/.test(s)) return 1; return 0
