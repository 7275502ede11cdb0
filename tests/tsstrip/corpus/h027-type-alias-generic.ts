type Box<T extends object = {}> = { value: T };
const b: Box<{ n: number }> = { value: { n: 1 } }; return b.value.n
