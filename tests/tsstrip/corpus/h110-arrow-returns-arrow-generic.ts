const f = <A,>(a: A) => <B,>(b: B): [A, B] => [a, b]; return f(1)("x")
