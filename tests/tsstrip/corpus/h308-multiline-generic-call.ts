function f<A, B>(a: A, b: B) { return [a, b] }
return f<
    number,
    string
>(1, "b")
