let x: {
    a: number,
    b: string
} = { a: 1, b: "b" };
return x
