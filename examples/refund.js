// Refund a paid order in full (input.order). billing.refund is sensitive: the run stops there
// until an approver decides, then goes on without calling store.listOrders again.
const order = (await store.listOrders("paid")).find((o) => o.id === input.order);
if (!order) throw new Error(`no paid order ${input.order}`);
const refund = await billing.refund(order.id, order.amount);
console.log(`refunded ${order.amount} to ${order.customer}`);
return refund;
