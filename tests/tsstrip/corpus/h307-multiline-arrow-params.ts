const f = (
    a: number,
    b: {
        c: string
    },
): string =>
    a + b.c;
return f(1, { c: "c" })
