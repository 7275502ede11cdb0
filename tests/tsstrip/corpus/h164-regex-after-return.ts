const f = () => { return /x<T>y/.test("x<T>y") }; return f()
