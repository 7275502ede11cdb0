function f(a: (string | number)[], b?: (string | number)[]): (string | number)[] { return [a, b] as any } return f(1 as any)
