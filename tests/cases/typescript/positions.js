type T = { a: string };
const f = (x: T): string =>
  x.a.toUpperCase();
return f(null as unknown as T);
