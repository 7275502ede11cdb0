const f = (async: number) => async; return f(5)
