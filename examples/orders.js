// An agent-style script: fetch paid orders and open invoices, total them per
// customer, and return only the summary (the raw records never leave the sandbox).
const orders = await store.listOrders("paid");
const customers = [...new Set(orders.map((o) => o.customer))];
const invoices = await Promise.all(customers.map((c) => billing.invoices(c)));

const summary = customers.map((customer, i) => {
  const paid = orders
    .filter((o) => o.customer === customer)
    .reduce((sum, o) => sum + o.amount, 0);
  const due = invoices[i].reduce((sum, inv) => sum + inv.due, 0);
  return { customer, orders: orders.filter((o) => o.customer === customer).length, paid, due };
});
summary.sort((a, b) => b.paid - a.paid);
console.log(`summarised ${orders.length} paid orders for ${customers.length} customers`);
return { customers: summary, totalPaid: summary.reduce((s, c) => s + c.paid, 0) };
