const f = async x => x + 1; return await f(1)
