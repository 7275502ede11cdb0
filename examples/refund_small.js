// Refund a paid order in full (input.order), only up to 500: a larger one fails before it
// reaches anyone. billing.refund is sensitive: the run waits for an approver there.
const order = (await store.listOrders("paid")).find((o) => o.id === input.order);
if (!order) throw new Error(`no paid order ${input.order}`);
if (order.amount > 500) throw new Error(`${order.id} is ${order.amount}: over 500, not small`);
return await billing.refund(order.id, order.amount);
