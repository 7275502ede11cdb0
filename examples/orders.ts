// examples/orders.js in TypeScript, as a template: the types say what the host functions
// return (airlockd's GET .../types declares store and billing; see docs/typescript.md), and
// airlock erases them before the run - it never checks them.
interface Order {
  id: string;
  customer: string;
  amount: number;
}
interface Invoice {
  due: number;
}

const orders: Order[] = await store.listOrders("paid");
const customers: string[] = [...new Set(orders.map((o) => o.customer))];
const invoices: Invoice[][] = await Promise.all(customers.map((c) => billing.invoices(c)));

const summary = customers.map((customer, i) => {
  const mine = orders.filter((o) => o.customer === customer);
  const paid = mine.reduce((sum, o) => sum + o.amount, 0);
  const due = invoices[i].reduce((sum, inv) => sum + inv.due, 0);
  return { customer, orders: mine.length, paid, due };
});
summary.sort((a, b) => b.paid - a.paid);
console.log(`summarised ${orders.length} paid orders for ${customers.length} customers`);
return { customers: summary, totalPaid: summary.reduce((s, c) => s + c.paid, 0) };
