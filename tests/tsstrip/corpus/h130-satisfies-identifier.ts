const satisfies = 3; return satisfies * 2
