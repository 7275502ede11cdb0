interface Order { id: number; total: number }
const raw: unknown = [{ id: 1, total: 2 }, { id: 2, total: 3 }];
const orders = <Order[]>raw;
const ids = <const>[orders[0].id, orders[1].id];
const pick = <T>(xs: readonly T[], i: number): T => xs[i];
const total = <number>orders.reduce((s, o) => s + o.total, 0);
const a = 1, b = 2, c = 3;
return { ids, total, first: pick(orders, 1).id, cmp: [a < b > c, <number>total > 4],
         nested: (<Array<Order>>(<unknown>orders)).length };
