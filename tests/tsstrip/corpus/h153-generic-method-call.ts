const arr = [1, 2, 3]; return arr.map<string>((x) => String(x)).reduce<number>((a, s) => a + s.length, 0)
