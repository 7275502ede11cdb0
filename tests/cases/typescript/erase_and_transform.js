interface Order { id: number; total: number }
type Id = Order["id"];
enum Color { Red, Green = "g" }
class Acc<T> implements Iterable<T> {
  constructor(private readonly items: T[]) {}
  count(): number { return this.items.length; }
  *[Symbol.iterator](): Iterator<T> { yield* this.items; }
}
function sum(xs: readonly Order[]): number { return xs.reduce((s, o) => s + o.total, 0); }
const orders = [{ id: 1, total: 2 }, { id: 2, total: 3 }] as const satisfies readonly Order[];
const first: Id = orders[0]!.id;
const n = new Acc<Order>([...orders]).count();
return { n, s: sum(orders), c: Color.Green, r: Color[0], first, lt: 1 < 2, gen: f<number>(3) };
function f<T,>(x: T): T { return x; }
