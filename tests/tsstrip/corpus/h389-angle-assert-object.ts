interface Foo { a: number }
const obj: unknown = { a: 2 }; return (<Foo>obj).a
